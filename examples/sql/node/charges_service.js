#!/usr/bin/env node
// charges_service: a small charges API whose POST /charges charges once per Idempotency-Key,
// however often it is retried, with idem's SQL functions inside the service's own PostgreSQL
// transaction (docs/sql.md): idem.begin claims the key, the charge is inserted, idem.finish
// records the answer, and one COMMIT makes all three durable together. A retry replays the
// recorded answer; a concurrent duplicate waits for the first and then replays it.
//
//   POST /charges  {"amount": 4200, "currency": "eur"} with Idempotency-Key: KEY
//                  201 {"id": N, ...}; a retry replays it (Idempotent-Replayed: true); 422 for
//                  an amount that is not a positive integer (recorded and replayed too), 422 for
//                  the key reused with another request, 409 while a lease holder has it, 400 for
//                  a bad key
//   GET  /stats    {"charges": N}
//
// Usage: node charges_service.js --store postgresql://... [--listen 127.0.0.1:0]
// Prints "listening on HOST:PORT". Needs `npm install` (the pg package) and a database where
// `idem keys migrate --store URI` ran (or share/idem/sql-functions.sql).
'use strict';
const crypto = require('crypto');
const http = require('http');
const { Pool } = require('pg');

const SCHEMA = `CREATE TABLE IF NOT EXISTS charges (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  idempotency_key text   NOT NULL,
  amount          bigint NOT NULL,
  currency        text   NOT NULL)`;

// Canonical JSON for objects of strings, integers, booleans and null (RFC 8785 writes these the
// same way: keys sorted, no whitespace). For bodies with fractional numbers use `idem fingerprint`.
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

// The fingerprint idem serve computes for the request (`idem fingerprint` prints it): SHA-256
// over length-prefixed fields (an 8-byte big-endian length, then the bytes).
function fingerprint(method, target, body) {
  const hash = crypto.createHash('sha256');
  const field = (data) => {
    const bytes = Buffer.from(data);
    const length = Buffer.alloc(8);
    length.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(length);
    hash.update(bytes);
  };
  field('idem-fingerprint-v1');
  field(method);
  field(target);
  try {
    const text = canonical(JSON.parse(body.toString('utf8')));
    field('json');
    field(text);
  } catch (e) {
    field('raw');
    field(body);
  }
  hash.update(Buffer.alloc(8)); // no headers are part of it
  return hash.digest('hex');
}

function problem(status, title, detail) {
  const body = Buffer.from(JSON.stringify({ type: 'about:blank', title, status, detail }));
  return { status, headers: { 'Content-Type': 'application/problem+json' }, body };
}

// One attempt, in one transaction of one pooled connection.
async function charge(pool, key, fp, request) {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const { rows } = await client.query(
      'SELECT decision, status, headers, body FROM idem.begin($1, $2)', [key, fp]);
    const { decision } = rows[0];
    if (decision !== 'run') {
      await client.query('COMMIT'); // begin wrote nothing
      if (decision === 'replay') {
        return { status: rows[0].status, headers: rows[0].headers, body: rows[0].body,
                 replayed: true };
      }
      if (decision === 'mismatch') {
        return problem(422, 'Idempotency-Key reused', 'this key was used for another request');
      }
      return problem(409, 'Request in progress', 'a request with this key is being processed');
    }
    // run: this transaction holds the key until COMMIT or ROLLBACK.
    const { amount, currency } = request;
    let answer;
    if (!Number.isInteger(amount) || amount <= 0) {
      // A deterministic failure: recorded like a success, so every retry gets it again.
      answer = problem(422, 'Invalid amount', 'amount must be a positive integer (minor units)');
    } else {
      const inserted = await client.query(
        'INSERT INTO charges (idempotency_key, amount, currency) VALUES ($1, $2, $3) ' +
        'RETURNING id', [key, amount, String(currency)]);
      answer = { status: 201, headers: { 'Content-Type': 'application/json' },
                 body: Buffer.from(JSON.stringify({ id: Number(inserted.rows[0].id), amount,
                                                    currency: String(currency) })) };
    }
    await client.query('SELECT idem.finish($1, $2, $3, $4)',
                       [key, answer.status, JSON.stringify(answer.headers), answer.body]);
    await client.query('COMMIT');
    return answer;
  } catch (e) {
    // Everything rolls back, the key included: the client's retry runs the charge afresh.
    await client.query('ROLLBACK').catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

function send(res, { status, headers, body, replayed }) {
  const out = { ...headers, 'Content-Length': body.length };
  if (replayed) out['Idempotent-Replayed'] = 'true';
  res.writeHead(status, out);
  res.end(body);
}

async function handle(pool, req, res, raw) {
  if (req.method === 'GET' && req.url === '/stats') {
    const { rows } = await pool.query('SELECT count(*)::int AS n FROM charges');
    return send(res, { status: 200, headers: { 'Content-Type': 'application/json' },
                       body: Buffer.from(JSON.stringify({ charges: rows[0].n })) });
  }
  if (req.method !== 'POST' || req.url !== '/charges') {
    return send(res, problem(404, 'Not found', 'POST /charges, GET /stats'));
  }
  let request;
  try {
    request = JSON.parse(raw.toString('utf8'));
    if (request === null || typeof request !== 'object') throw new Error('not an object');
  } catch (e) {
    return send(res, problem(400, 'Bad body', 'send a JSON object'));
  }
  const key = String(req.headers['idempotency-key'] || '').trim().replace(/^"(.*)"$/, '$1');
  try {
    send(res, await charge(pool, key, fingerprint('POST', req.url, raw), request));
  } catch (e) {
    if (e.code && e.code.startsWith('22')) {  // idem's bad-input errors name the rule
      return send(res, problem(400, 'Bad Idempotency-Key', e.message));
    }
    send(res, problem(503, 'Try again', 'the database is unavailable'));
  }
}

async function main() {
  const args = process.argv.slice(2);
  const flag = (name, fallback) => {
    const i = args.indexOf(name);
    return i >= 0 ? args[i + 1] : fallback;
  };
  const store = flag('--store');
  if (!store) {
    console.error('usage: node charges_service.js --store postgresql://... [--listen H:P]');
    process.exit(2);
  }
  const pool = new Pool({ connectionString: store, max: 8 });
  await pool.query(SCHEMA);
  const [host, port] = flag('--listen', '127.0.0.1:0').split(':');
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => handle(pool, req, res, Buffer.concat(chunks)));
  });
  server.listen(Number(port), host, () => {
    const a = server.address();
    console.log(`listening on ${a.address}:${a.port}`);
  });
  process.on('SIGTERM', () => server.close(() => pool.end()));
}

if (require.main === module) {
  main().catch((e) => {
    console.error(e.message);
    process.exit(1);
  });
}
module.exports = { fingerprint };
