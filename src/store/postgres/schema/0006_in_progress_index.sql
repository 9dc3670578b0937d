-- Migration 6: the in_progress records alone, for KeyQuery::lapsed (the claims `idem serve`
-- recovers, `idem keys list --lapsed`): an idle store answers that query from this small index
-- instead of scanning every finished record.
CREATE INDEX idem_keys_in_progress ON idem_keys (lease_until_ms) WHERE state = 1;
