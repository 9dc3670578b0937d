-- Migration 2: one store-wide fence counter (idem/store.h, "Fences"). Every claim, replacement of
-- an expired record and takeover draws its fence from here, in its own write transaction, so a
-- fence is never handed out twice, not even to a key that was released or swept and claimed
-- again. It starts at the highest fence in use; processes of an idem older than this migration
-- (which start every claim at fence 1) must be stopped before it is applied.
CREATE TABLE idem_fence (
  id   INTEGER PRIMARY KEY CHECK (id = 1),
  last INTEGER NOT NULL CHECK (last >= 0)
);
INSERT INTO idem_fence (id, last) SELECT 1, coalesce(max(fence), 0) FROM idem_keys;
