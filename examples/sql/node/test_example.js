#!/usr/bin/env node
// Runs charges_service.js against a real PostgreSQL store where `idem keys migrate` installed
// idem's SQL: concurrent duplicates (one charge, every answer the same), a reused key (422), an
// invalid amount (422, recorded and replayed), a bad key (400), and its fingerprint agrees with
// `idem fingerprint`. Usage: node test_example.js --idem PATH/TO/idem --store URI
'use strict';
const assert = require('assert');
const { execFileSync, spawn } = require('child_process');
const http = require('http');
const path = require('path');
const { fingerprint } = require('./charges_service');

const BODY = '{"amount":4200,"currency":"eur"}';

function request(port, method, target, headers, body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
                                    body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const post = (port, key, body) =>
  request(port, 'POST', '/charges', { 'Idempotency-Key': key, 'Content-Type': 'application/json' },
          body);

async function main() {
  const args = process.argv.slice(2);
  const idem = args[args.indexOf('--idem') + 1];
  const store = args[args.indexOf('--store') + 1];
  const printed = execFileSync(idem, ['fingerprint', '--method', 'POST', '--target', '/charges',
                                      '--body', '{ "currency": "eur", "amount": 4200 }'])
                      .toString().trim();
  assert.strictEqual(fingerprint('POST', '/charges', Buffer.from(BODY)), printed,
                     'the example computes another fingerprint than idem fingerprint');

  const service = spawn(process.execPath, [path.join(__dirname, 'charges_service.js'),
                                           '--store', store], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const port = await new Promise((resolve, reject) => {
      service.stdout.once('data', (d) => resolve(Number(String(d).trim().split(':').pop())));
      service.once('exit', () => reject(new Error('charges_service.js did not start')));
    });
    const answers = await Promise.all(Array.from({ length: 8 }, () => post(port, 'n-1', BODY)));
    assert.ok(answers.every((a) => a.status === 201), JSON.stringify(answers));
    assert.strictEqual(new Set(answers.map((a) => a.body)).size, 1, 'different answers');
    assert.strictEqual(answers.filter((a) => !a.headers['idempotent-replayed']).length, 1);
    assert.strictEqual((await post(port, 'n-1', '{"amount":1,"currency":"eur"}')).status, 422);
    const first = await post(port, 'n-2', '{"amount":0,"currency":"eur"}');
    const again = await post(port, 'n-2', '{"amount":0,"currency":"eur"}');
    assert.strictEqual(first.status, 422);
    assert.strictEqual(again.status, 422);
    assert.strictEqual(again.body, first.body);
    assert.strictEqual(again.headers['idempotent-replayed'], 'true');
    const bad = await post(port, 'a b', BODY);
    assert.strictEqual(bad.status, 400, bad.body);
    const stats = JSON.parse((await request(port, 'GET', '/stats', {}, '')).body);
    assert.strictEqual(stats.charges, 1, 'charged more than once');
    console.log('node example: all checks passed');
  } finally {
    service.kill('SIGTERM');
  }
}

main().catch((e) => {
  console.error(`FAILED: ${e.message}`);
  process.exit(1);
});
