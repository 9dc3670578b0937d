-- Migration 7: the nonce of the claim holding an in_progress record (LeaseWrite::claim_nonce, 128
-- random bits as hex), beside its owner. A claim whose acknowledgement was lost recognises its
-- own record by this nonce, never by the owner, a label that two claimers may share. NULL: rows
-- written before, or by a claim that gave none; no retry takes those as its own. Adding a
-- nullable column without a default rewrites no row.
ALTER TABLE idem_keys ADD COLUMN claim_nonce text;
