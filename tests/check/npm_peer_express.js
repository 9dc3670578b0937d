// A peer for the zoo (docs/idem-check.md, "The zoo"): an Express charges API behind the npm
// package express-idempotency with its Redis adapter, which looks a key up and then stores it
// (two round trips): duplicates sent at once may both run. Usage:
//   node npm_peer_express.js PORT REDIS_URL
// POST /charges makes a charge (201, a new id); GET /count answers {"effects": N}.
const express = require("express");
const idempotency = require("express-idempotency");
const RedisAdapter = require("express-idempotency-redis-adapter").default;

const [port, redisUrl] = process.argv.slice(2);
const adapter = new RedisAdapter({ connectionConfig: { url: redisUrl } });
let charges = 0;

adapter.connect().then(() => {
  const app = express();
  app.use(express.json());
  app.get("/count", (req, res) => res.json({ effects: charges }));
  app.use(idempotency.idempotency({ dataAdapter: adapter }));
  app.post("/charges", (req, res) => {
    charges += 1;
    res.status(201).json({ id: `ch_${charges}`, amount: req.body.amount });
  });
  app.listen(Number(port), "127.0.0.1");
}).catch((error) => {
  console.error(error);
  process.exit(1);
});
