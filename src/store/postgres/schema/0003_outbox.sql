-- Migration 3: the transactional outbox (idem/outbox.h, docs/outbox.md). A message is added in
-- the caller's transaction and published by `idem relay` at least once, in `seq` order per
-- aggregate_key. `seq` orders messages; `id` (a UUIDv7) is the id a message is published under.
-- state: 'pending' (to be sent; due at next_attempt_ms), 'sent' (acknowledged at sent_ms; deleted
-- after retention), 'dead' (its attempts ran out; last_error says why). headers: a JSON array of
-- [name, value] pairs. Timestamps are integer milliseconds since the Unix epoch, UTC. The column
-- names are the SQLite store's, so one SQL text serves both.
CREATE TABLE idem_outbox (
  seq             bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id              text    NOT NULL UNIQUE,
  topic           text    NOT NULL,
  aggregate_key   text    NOT NULL,
  headers         text    NOT NULL DEFAULT '[]',
  payload         bytea   NOT NULL,
  state           text    NOT NULL DEFAULT 'pending'
                  CHECK (state = 'pending' OR state = 'sent' OR state = 'dead'),
  attempts        integer NOT NULL DEFAULT 0,
  next_attempt_ms bigint  NOT NULL,
  last_error      text    NOT NULL DEFAULT '',
  created_ms      bigint  NOT NULL,
  sent_ms         bigint  NOT NULL DEFAULT 0
);

CREATE INDEX idem_outbox_unsent ON idem_outbox (aggregate_key, seq) WHERE state <> 'sent';
CREATE INDEX idem_outbox_pending ON idem_outbox (seq) WHERE state = 'pending';
CREATE INDEX idem_outbox_sent ON idem_outbox (sent_ms) WHERE state = 'sent';

-- Several relays share the work by aggregate: a relay publishes an aggregate's messages only
-- while it holds the aggregate's lease here (taken with FOR UPDATE SKIP LOCKED, held in no
-- transaction while the batch is published), so two relays never send one aggregate's messages
-- at once or out of order. A lease whose lease_until_ms passed is free.
CREATE TABLE idem_outbox_leases (
  aggregate_key  text   PRIMARY KEY,
  token          text   NOT NULL,
  lease_until_ms bigint NOT NULL
);

-- Wakes relays waiting with LISTEN idem_outbox within milliseconds of a commit that added
-- messages (a notification is delivered at commit, and not at all on rollback).
CREATE FUNCTION idem_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('idem_outbox', '');
  RETURN NULL;
END
$$;
CREATE TRIGGER idem_outbox_notify AFTER INSERT ON idem_outbox
  FOR EACH STATEMENT EXECUTE FUNCTION idem_outbox_notify();
