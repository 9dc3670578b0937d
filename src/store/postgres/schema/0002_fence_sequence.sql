-- Migration 2: one store-wide fence sequence (idem/store.h, "Fences"). Every claim, replacement
-- of an expired record and takeover draws its fence from it, so a fence is never handed out
-- twice, not even to a key that was released or swept and claimed again. It starts above the
-- highest fence in use; processes of an idem older than this migration (which start every claim
-- at fence 1) must be stopped before it is applied.
CREATE SEQUENCE idem_fence_seq AS bigint MINVALUE 1;
SELECT setval('idem_fence_seq', coalesce((SELECT max(fence) FROM idem_keys), 0) + 1, false);
