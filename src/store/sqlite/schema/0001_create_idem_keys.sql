-- Migration 1: the key records (DESIGN §1). Timestamps are integer milliseconds since the Unix
-- epoch, UTC. A record counts as absent at and after `expires`. The state CHECK is written as
-- equalities, not IN (...): SQLite builds a temporary index for an IN list at every INSERT and
-- UPDATE that checks it.
CREATE TABLE idem_keys (
  tenant      TEXT    NOT NULL,
  key         TEXT    NOT NULL,
  fingerprint TEXT    NOT NULL,
  state       TEXT    NOT NULL
              CHECK (state = 'in_progress' OR state = 'completed' OR state = 'failed_final'),
  fence       INTEGER NOT NULL CHECK (fence > 0),
  owner       TEXT    NOT NULL,
  lease_until INTEGER NOT NULL,
  status      INTEGER NOT NULL DEFAULT 0,
  headers     BLOB    NOT NULL DEFAULT x'',
  body        BLOB    NOT NULL DEFAULT x'',
  created     INTEGER NOT NULL,
  updated     INTEGER NOT NULL,
  expires     INTEGER NOT NULL,
  PRIMARY KEY (tenant, key)
);

-- The sweeper finds expired records without scanning the table.
CREATE INDEX idem_keys_expires ON idem_keys (expires);
