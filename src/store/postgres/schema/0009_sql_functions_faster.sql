-- Migration 9: idem.begin and idem.finish (migration 8, docs/sql.md) replaced by versions that do
-- the same with less work per call; the contract (names, arguments, defaults, result columns,
-- SQLSTATEs, messages) is unchanged. A store migrated with 8 gets these on its next opening; 8's
-- text stays as it was (applied migrations are checksummed).
--
-- Why each change (bench/RESULTS.md, "SQL functions", measured with callgrind on one backend
-- and by the server's CPU per transaction from many connections):
-- - No PL/pgSQL variable assigned from a clock, a setting or the transaction id: every simple
--   expression that is not immutable costs its own snapshot and command counter increment (the
--   functions took 13 snapshots per begin-insert-finish transaction against 6 by hand, and a
--   snapshot costs the more the more connections are open), and every expression is compiled
--   again in each transaction. The time and the owner are computed inside the one INSERT or
--   UPDATE instead: now 8 snapshots.
-- - idem.begin's time is statement_timestamp(), the same value for every column of the claim;
--   idem.finish's is the clock, read when the outcome is recorded.
-- - idem.finish checks key and tenant only when its UPDATE finds no claim of this transaction
--   (idem.begin has checked them before anything was stored), then raises as before: class 22
--   for bad input (headers too), else IDEM2. The status is still checked first.
-- - idem.retention_ms() compiles to a small expression when idem.retention is unset (it is
--   planned into every claim and outcome): the interval parsing moves to
--   idem.retention_setting_ms, called only when the setting is set.
-- - idem.decode_headers (replays) converts an ASCII field without an EXCEPTION block (each is a
--   subtransaction); only a field with other bytes takes the old path.
DO $migration$
DECLARE
  may boolean;
BEGIN
  -- Who may replace the functions: as migration 8 decides (a role confined to its own schema
  -- leaves them alone, with a notice, and the migration applies all the same).
  IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'idem') THEN
    may := has_database_privilege(current_database(), 'CREATE');
  ELSE
    may := has_schema_privilege('idem', 'CREATE') AND NOT EXISTS (
      SELECT 1 FROM pg_proc
       WHERE pronamespace = 'idem'::regnamespace
         AND NOT pg_has_role(current_user, proowner, 'MEMBER'));
  END IF;
  IF NOT may THEN
    RAISE NOTICE 'idem: role % may not create or replace the functions of schema idem, so it '
      'leaves them as they are; install them as a role that may (idem keys migrate, or psql -f '
      'share/idem/sql-functions.sql)', current_user;
    RETURN;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_proc WHERE proname = 'begin'
                    AND pronamespace = (SELECT oid FROM pg_namespace WHERE nspname = 'idem')) THEN
    -- Migration 8 skipped them (its role may not have); this one may: a role that may runs
    -- migration 8's text first (idem keys migrate, or the psql file, which has both).
    RAISE NOTICE 'idem: schema idem has no functions to replace; install them with idem keys '
      'migrate as a role that may create them, or psql -f share/idem/sql-functions.sql';
    RETURN;
  END IF;
  EXECUTE $functions$
-- A claim's time: the calling statement's start, one value for all of a row's columns.
CREATE OR REPLACE FUNCTION idem.statement_ms() RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS
$$ SELECT floor(date_part('epoch', statement_timestamp()) * 1000)::bigint $$;

-- The server's clock in milliseconds, as idem.now_ms() but through date_part (a double; extract()
-- computes a numeric, which costs more).
CREATE OR REPLACE FUNCTION idem.clock_ms() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS
$$ SELECT floor(date_part('epoch', clock_timestamp()) * 1000)::bigint $$;

-- idem.retention when it is set: a positive interval in milliseconds, or 22023.
CREATE OR REPLACE FUNCTION idem.retention_setting_ms(setting text) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
DECLARE
  ms bigint := floor(date_part('epoch', setting::interval) * 1000)::bigint;
BEGIN
  IF ms > 0 THEN RETURN ms; END IF;
  RETURN idem.bad_retention(setting);
END
$$;
CREATE OR REPLACE FUNCTION idem.retention_ms() RETURNS bigint LANGUAGE sql STABLE AS $$
SELECT CASE WHEN coalesce(current_setting('idem.retention', true), '') = '' THEN 86400000::bigint
            ELSE idem.retention_setting_ms(current_setting('idem.retention', true)) END
$$;

CREATE OR REPLACE FUNCTION idem.decode_headers(bytes bytea) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  out jsonb := '{}';
  pos integer := 0;
  fields text[] := '{}';
  n integer;
  field bytea;
  text_of text;
BEGIN
  WHILE pos + 4 <= length(bytes) LOOP
    n := (get_byte(bytes, pos) << 24) | (get_byte(bytes, pos + 1) << 16)
         | (get_byte(bytes, pos + 2) << 8) | get_byte(bytes, pos + 3);
    EXIT WHEN pos + 4 + n > length(bytes);
    field := substring(bytes FROM pos + 5 FOR n);
    pos := pos + 4 + n;
    -- The escape encoding writes bytes 0x01-0x7F as themselves but a backslash, NUL and bytes
    -- from 0x80 as \nnn: without a backslash it is the field's ASCII text.
    text_of := encode(field, 'escape');
    IF strpos(text_of, '\') > 0 THEN
      BEGIN
        text_of := convert_from(field, 'UTF8');
      EXCEPTION WHEN character_not_in_repertoire OR untranslatable_character THEN
        NULL;  -- a value another writer stored in another charset: its escape encoding
      END;
    END IF;
    fields := fields || text_of;
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(fields, 1), 0) / 2 LOOP
    IF NOT out ? fields[2 * i - 1] THEN
      out := out || jsonb_build_object(fields[2 * i - 1], fields[2 * i]);
    ELSIF jsonb_typeof(out -> fields[2 * i - 1]) = 'array' THEN
      out := jsonb_set(out, ARRAY[fields[2 * i - 1]],
                       (out -> fields[2 * i - 1]) || to_jsonb(fields[2 * i]));
    ELSE
      out := jsonb_set(out, ARRAY[fields[2 * i - 1]],
                       jsonb_build_array(out -> fields[2 * i - 1], fields[2 * i]));
    END IF;
  END LOOP;
  RETURN out;
END
$$;

-- In the caller's transaction: run (claimed: do the business writes, idem.finish, COMMIT),
-- replay (the recorded outcome comes back), mismatch (another request's key), in_progress (held
-- in lease mode). A ROLLBACK leaves no trace of the claim. docs/sql.md has the decision table.
CREATE OR REPLACE FUNCTION idem.begin(key text, fingerprint text, tenant text DEFAULT '')
RETURNS TABLE (decision text, status integer, headers jsonb, body bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
  -- idem.check_scope's rules, checked inline first: a well-formed call makes no extra call.
  -- (No {1,255} bound in the pattern: PostgreSQL's regex engine runs it a hundred times slower.)
  IF begin.key IS NULL OR length(begin.key) > 255 OR begin.key !~ '^[!-~]+$'
     OR begin.fingerprint IS NULL OR begin.tenant IS NULL
     OR (begin.tenant <> '' AND (octet_length(begin.tenant) > 255
                                 OR begin.tenant ~ '[\x01-\x1f\x7f]')) THEN
    PERFORM idem.check_scope('idem.begin', begin.key, begin.tenant);
    PERFORM idem.check_fingerprint('idem.begin', begin.fingerprint);
  END IF;
  -- The common case, a new key, in one statement; everything else in idem.claim (which tries
  -- this again). A claim committed unfinished (never by a correct caller) holds as a lease of
  -- 30 s, the C++ transaction mode's, and is then taken over by the same request. The owner is
  -- idem.transaction_owner(pg_current_xact_id()), written out. (Not RETURN QUERY INSERT ...
  -- RETURNING: its projection costs more than FOUND and RETURN NEXT.)
  INSERT INTO idem_keys AS k (tenant, key, fingerprint, state, fence, owner, lease_until_ms,
                              created_ms, updated_ms, expires_ms)
  VALUES (begin.tenant, begin.key, begin.fingerprint, 1, nextval('idem_fence_seq'),
          'sql:xact:' || pg_current_xact_id()::text, idem.statement_ms() + 30000,
          idem.statement_ms(), idem.statement_ms(),
          idem.statement_ms() + greatest(idem.retention_ms(), 30000))
  ON CONFLICT (tenant, key) DO NOTHING;
  IF FOUND THEN
    decision := 'run';
    RETURN NEXT;
    RETURN;
  END IF;
  RETURN QUERY
  SELECT c.decision, c.status, c.headers, c.body
    FROM idem.claim('idem.begin', begin.key, begin.fingerprint, begin.tenant, 30000,
                    'sql:xact:' || pg_current_xact_id()::text, true) AS c;
END
$$;

-- Records the outcome of the key this transaction claimed with idem.begin: status below 400
-- completed, 400 and above failed_final; replayed for idem.retention from now.
CREATE OR REPLACE FUNCTION idem.finish(key text, status integer, headers jsonb DEFAULT '{}',
                                       body bytea DEFAULT NULL, tenant text DEFAULT '')
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_variable
BEGIN
  IF status IS NULL OR status < 100 OR status > 599 THEN
    PERFORM idem.check_scope('idem.finish', key, tenant);
    PERFORM idem.check_status('idem.finish', status);
  END IF;
  -- The owner: idem.transaction_owner of this transaction's id, NULL (no match) when it has
  -- none. The headers: as idem.encode_headers, the last ones this session stored remembered.
  UPDATE idem_keys AS k SET state = CASE WHEN finish.status < 400 THEN 2 ELSE 3 END,
         status = finish.status,
         headers = CASE WHEN finish.headers IS NULL OR finish.headers = '{}'::jsonb THEN ''::bytea
                        WHEN current_setting('idem.headers_memo_json', true)
                             = finish.headers::text
                          THEN decode(current_setting('idem.headers_memo_bytes', true), 'hex')
                        ELSE idem.encode_headers_remembered('idem.finish', finish.headers) END,
         body = coalesce(finish.body, ''), updated_ms = idem.clock_ms(),
         expires_ms = idem.clock_ms() + idem.retention_ms()
   WHERE k.tenant = finish.tenant AND k.key = finish.key AND k.state = 1
     AND k.owner = 'sql:xact:' || pg_current_xact_id_if_assigned()::text;
  IF NOT FOUND THEN
    -- Bad input is named first, as before: nothing of this transaction could have claimed it.
    PERFORM idem.check_scope('idem.finish', key, tenant);
    PERFORM idem.encode_headers('idem.finish', headers);
    RAISE EXCEPTION 'idem.finish: this transaction holds no claim on key ''%'' (tenant ''%''): '
      'call idem.begin first and finish only after it returned run, in the same transaction, '
      'and not after a ROLLBACK (TO SAVEPOINT) that undid the claim', finish.key, finish.tenant
      USING ERRCODE = 'IDEM2';
  END IF;
END
$$;
$functions$;
END
$migration$;
