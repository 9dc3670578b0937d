-- Migration 1: the key records (DESIGN §1). Timestamps are integer milliseconds since the Unix
-- epoch, UTC; a record counts as absent at and after expires_ms. state is idem::KeyState:
-- 1 in_progress, 2 completed, 3 failed_final (persisted: never renumber). headers holds the
-- replayable headers, each as a 4-byte big-endian length and the name, then the same for the
-- value. Applied migrations are never edited: a change is a new numbered file.
CREATE TABLE idem_keys (
  tenant         text     NOT NULL,
  key            text     NOT NULL,
  fingerprint    text     NOT NULL,
  state          smallint NOT NULL CHECK (state IN (1, 2, 3)),
  fence          bigint   NOT NULL CHECK (fence > 0),
  owner          text     NOT NULL,
  lease_until_ms bigint   NOT NULL,
  status         integer  NOT NULL DEFAULT 0,
  headers        bytea    NOT NULL DEFAULT '',
  body           bytea    NOT NULL DEFAULT '',
  created_ms     bigint   NOT NULL,
  updated_ms     bigint   NOT NULL,
  expires_ms     bigint   NOT NULL,
  PRIMARY KEY (tenant, key)
);

-- The sweeper finds expired records without scanning the table.
CREATE INDEX idem_keys_expires ON idem_keys (expires_ms);
