-- Migration 3: the transactional outbox (idem/outbox.h, docs/outbox.md). A message is added in
-- the caller's transaction and published by `idem relay` at least once, in `seq` order per
-- aggregate_key. `seq` (AUTOINCREMENT: never reused, also after sent rows are deleted) orders
-- messages; `id` (a UUIDv7) is the id a message is published under. state: 'pending' (to be
-- sent; due at next_attempt_ms), 'sent' (acknowledged at sent_ms; deleted after retention),
-- 'dead' (its attempts ran out; last_error says why). headers: a JSON array of [name, value]
-- pairs. Timestamps are integer milliseconds since the Unix epoch, UTC. On SQLite one relay runs
-- at a time, so no leases are needed here.
CREATE TABLE idem_outbox (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  id              TEXT    NOT NULL UNIQUE,
  topic           TEXT    NOT NULL,
  aggregate_key   TEXT    NOT NULL,
  headers         TEXT    NOT NULL DEFAULT '[]',
  payload         BLOB    NOT NULL,
  state           TEXT    NOT NULL DEFAULT 'pending'
                  CHECK (state = 'pending' OR state = 'sent' OR state = 'dead'),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms INTEGER NOT NULL,
  last_error      TEXT    NOT NULL DEFAULT '',
  created_ms      INTEGER NOT NULL,
  sent_ms         INTEGER NOT NULL DEFAULT 0
);

-- The relay walks each aggregate's unsent messages in order, and finds due ones in seq order.
CREATE INDEX idem_outbox_unsent ON idem_outbox (aggregate_key, seq) WHERE state <> 'sent';
CREATE INDEX idem_outbox_pending ON idem_outbox (seq) WHERE state = 'pending';
-- Retention deletes sent messages without scanning the table.
CREATE INDEX idem_outbox_sent ON idem_outbox (sent_ms) WHERE state = 'sent';
