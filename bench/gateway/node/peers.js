// The Node peers bench/gateway/run.sh measures idem serve against: an Express app that proxies
// POST /charges to the same upstream (examples/charges) through a keep-alive agent, guarded by
//   node peers.js node-idempotency    PORT UPSTREAM_PORT REDIS_PORT   @node-idempotency/core + its Redis adapter
//   node peers.js express-idempotency PORT UPSTREAM_PORT REDIS_PORT   express-idempotency + its Redis adapter
// @node-idempotency publishes no Express integration (only NestJS); the middleware below calls its
// core the way its NestJS interceptor does: onRequest before the handler, onResponse after.
'use strict';
const http = require('http');
const express = require('express');

const [mode, port, upstreamPort, redisPort] = process.argv.slice(2);
const agent = new http.Agent({keepAlive: true, maxSockets: 64});
const redisUrl = `redis://127.0.0.1:${redisPort}`;

// Forwards the request to charges; calls done(status, headers, bodyText).
function forward(req, done) {
  const body = JSON.stringify(req.body);
  const up = http.request({
    host: '127.0.0.1', port: upstreamPort, method: req.method, path: req.originalUrl, agent,
    headers: {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(body),
      'idempotency-key': req.get('idempotency-key') || '',
    },
  }, (res) => {
    const chunks = [];
    res.on('data', (c) => chunks.push(c));
    res.on('end', () => done(res.statusCode, res.headers, Buffer.concat(chunks).toString()));
  });
  up.on('error', () => done(502, {}, '{"error":"upstream"}'));
  up.end(body);
}

function send(res, status, headers, text) {
  if (headers['content-type']) res.set('content-type', headers['content-type']);
  if (headers.location) res.set('location', headers.location);
  res.status(status).send(text);
}

async function nodeIdempotency(app) {
  const {Idempotency, IdempotencyError} = require('@node-idempotency/core');
  const {RedisStorageAdapter} = require('@node-idempotency/storage-adapter-redis');
  const storage = new RedisStorageAdapter({url: redisUrl});
  await storage.connect();
  const idem = new Idempotency(storage, {cacheTTLMS: 24 * 3600 * 1000});
  app.post('/charges', async (req, res) => {
    const params = {headers: req.headers, path: req.path, body: req.body, method: req.method};
    try {
      const cached = await idem.onRequest(params);
      if (cached) {
        res.set('idempotent-replayed', 'true');
        send(res, cached.additional.status, cached.additional.headers, cached.body);
        return;
      }
    } catch (e) {
      const status = e instanceof IdempotencyError && e.code === 'REQUEST_IN_PROGRESS' ? 409 : 422;
      res.status(status).json({error: e.message});
      return;
    }
    forward(req, async (status, headers, text) => {
      const keep = {'content-type': headers['content-type'], location: headers.location};
      try {
        await idem.onResponse(params, {body: text, additional: {status, headers: keep}});
      } catch (e) {
        res.status(500).json({error: e.message});
        return;
      }
      send(res, status, headers, text);
    });
  });
}

async function expressIdempotency(app) {
  const idempotency = require('express-idempotency');
  const RedisAdapter = require('express-idempotency-redis-adapter').default;
  const adapter = new RedisAdapter({connectionConfig: {url: redisUrl}});
  await adapter.connect();
  app.post('/charges', idempotency.idempotency({dataAdapter: adapter}), (req, res) => {
    if (idempotency.getSharedIdempotencyService().isHit(req)) return;
    forward(req, (status, headers, text) => send(res, status, headers, text));
  });
}

async function main() {
  const app = express();
  app.use(express.json());
  if (mode === 'node-idempotency') await nodeIdempotency(app);
  else if (mode === 'express-idempotency') await expressIdempotency(app);
  else throw new Error(`unknown mode ${mode}`);
  const server = app.listen(Number(port), '127.0.0.1', () => console.error(`${mode} on ${port}`));
  server.keepAliveTimeout = 60000;
  process.on('SIGTERM', () => process.exit(0));
}

main().catch((e) => { console.error(e); process.exit(1); });
