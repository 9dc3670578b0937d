-- Migration 4: the inbox (idem/inbox.h, docs/inbox.md). A consumer records (source, message_id)
-- in the transaction that applies the message's effect; the primary key makes a redelivery a
-- no-op. received_ms: milliseconds since the Unix epoch, UTC, for ForgetInboxBefore. Column
-- names are the SQLite store's, so one SQL text serves both.
CREATE TABLE idem_inbox (
  source      text   NOT NULL,
  message_id  text   NOT NULL,
  received_ms bigint NOT NULL,
  PRIMARY KEY (source, message_id)
);
CREATE INDEX idem_inbox_received ON idem_inbox (received_ms);
