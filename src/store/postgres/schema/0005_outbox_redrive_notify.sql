-- Migration 5: a message re-driven (dead back to pending, `idem outbox redrive`) wakes the relays
-- waiting with LISTEN idem_outbox, as a new message does (migration 3), instead of waiting for
-- their poll. One notification per transaction however many rows it re-drives (PostgreSQL folds
-- equal notifications of a transaction); the relay's own updates never match the WHEN clause.
-- The payload is the outbox's schema: relays ignore it; it tells stores on one server apart.
CREATE FUNCTION idem_outbox_notify_redrive() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('idem_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END
$$;
CREATE TRIGGER idem_outbox_notify_redrive AFTER UPDATE OF state ON idem_outbox
  FOR EACH ROW WHEN (OLD.state = 'dead' AND NEW.state = 'pending')
  EXECUTE FUNCTION idem_outbox_notify_redrive();
