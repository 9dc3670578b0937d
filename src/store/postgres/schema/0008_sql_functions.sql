-- Migration 8: idem from any language, in SQL (docs/sql.md). Schema `idem` holds the functions
-- idem.begin / idem.finish (a claim inside the caller's own transaction, committed or rolled back
-- with its business writes) and idem.acquire / idem.heartbeat / idem.complete / idem.release
-- (lease mode, each call its own transaction, every write after the claim fenced). They write
-- ordinary idem_keys records: fences from idem_fence_seq (migration 2), states 1 in_progress,
-- 2 completed, 3 failed_final, times in milliseconds since the epoch by the server's clock,
-- headers in migration 1's encoding, no claim_nonce (migration 7: a claim made here is never
-- another's lost-acknowledgement retry). `idem keys`, the sweeper and idem serve see them as any
-- other.
--
-- The functions name idem_keys and idem_fence_seq unqualified: they act on the store the
-- caller's search_path reaches (the schema idem's programs were pointed at), so several stores in
-- one database (one per schema) share these definitions. It may run again on a database that
-- has them (CREATE OR REPLACE, a schema created only when absent): the same text ships as
-- share/idem/sql-functions.sql for installing with psql, and a store migrated later records it.
--
-- Installing them needs CREATE on the database (the first time, for the schema) or on schema
-- idem and ownership of its functions (membership of their owner's role). A role without it (an
-- application's role confined to its own schema) skips them with a notice and the migration
-- still applies: the store opens, and the functions are installed once per database by a role
-- that may (`idem keys migrate` as that role, or psql -f share/idem/sql-functions.sql).
--
-- Errors (docs/sql.md, "Error codes"): class 22 for bad input, the message naming the rule
-- (22004 a NULL where a value is required, 22023 any other broken rule; 22021, invalid UTF-8, is
-- the server's own, raised before a function runs); IDEM1 a fenced write whose fence no longer
-- holds the key (nothing changed); IDEM2 idem.finish of a key this transaction did not claim.
DO $migration$
DECLARE
  may boolean;
BEGIN
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
  -- Not CREATE SCHEMA IF NOT EXISTS: it asks for CREATE on the database even when the schema is
  -- there.
  IF NOT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'idem') THEN
    CREATE SCHEMA idem;
  END IF;
  EXECUTE $functions$
-- The server's clock, as every lease-mode call of the C++ stores reads it.
CREATE OR REPLACE FUNCTION idem.now_ms() RETURNS bigint LANGUAGE sql VOLATILE PARALLEL SAFE AS
$$ SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- How long a finished record is replayed: the setting idem.retention (an interval, e.g.
-- ALTER DATABASE app SET idem.retention = '7 days'), 24 hours when unset, as StoreOptions.
-- Plain SQL, so that the planner inlines it into the statements that use it (which it does only
-- when nothing it calls is more volatile than it: bad_retention, which only raises, is STABLE).
CREATE OR REPLACE FUNCTION idem.bad_retention(setting text) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RAISE EXCEPTION 'idem.retention must be a positive interval, e.g. ''24 hours''; got ''%''',
    setting USING ERRCODE = '22023';
END
$$;
CREATE OR REPLACE FUNCTION idem.retention_ms() RETURNS bigint LANGUAGE sql STABLE AS $$
SELECT CASE WHEN coalesce(current_setting('idem.retention', true), '') = '' THEN 86400000::bigint
            WHEN current_setting('idem.retention', true)::interval > interval '0'
              THEN floor(extract(epoch FROM current_setting('idem.retention', true)::interval)
                         * 1000)::bigint
            ELSE idem.bad_retention(current_setting('idem.retention', true)) END
$$;

-- Raises 22004/22023 unless key is 1-255 visible ASCII characters and tenant at most 255 bytes
-- without control characters: the rules of idem/key.h, so every record is one idem serve and
-- idem keys accept.
CREATE OR REPLACE FUNCTION idem.check_scope(fn text, key text, tenant text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF key IS NULL THEN
    RAISE EXCEPTION '%: key must not be NULL', fn USING ERRCODE = '22004';
  END IF;
  IF key = '' THEN
    RAISE EXCEPTION '%: key must not be empty (1 to 255 visible ASCII characters)', fn
      USING ERRCODE = '22023';
  END IF;
  IF length(key) > 255 THEN
    RAISE EXCEPTION '%: key must be at most 255 characters; got %', fn, length(key)
      USING ERRCODE = '22023';
  END IF;
  IF key !~ '^[!-~]+$' THEN
    RAISE EXCEPTION '%: key must be visible ASCII characters only (0x21-0x7E: no space, control '
      'or non-ASCII character)', fn USING ERRCODE = '22023';
  END IF;
  IF tenant IS NULL THEN
    RAISE EXCEPTION '%: tenant must not be NULL (use '''' for the global scope)', fn
      USING ERRCODE = '22004';
  END IF;
  IF octet_length(tenant) > 255 OR tenant ~ '[\x01-\x1f\x7f]' THEN
    RAISE EXCEPTION '%: tenant must be at most 255 bytes of UTF-8 without control characters', fn
      USING ERRCODE = '22023';
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION idem.check_fingerprint(fn text, fingerprint text) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF fingerprint IS NULL THEN
    RAISE EXCEPTION '%: fingerprint must not be NULL (any text naming the request; docs/sql.md '
      'recommends the SHA-256 hex of the canonical request)', fn USING ERRCODE = '22004';
  END IF;
END
$$;

-- Raises 22004/22023 unless status is an HTTP status, 100 to 599.
CREATE OR REPLACE FUNCTION idem.check_status(fn text, status integer) RETURNS void
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF status IS NULL THEN
    RAISE EXCEPTION '%: status must not be NULL', fn USING ERRCODE = '22004';
  END IF;
  IF status < 100 OR status > 599 THEN
    RAISE EXCEPTION '%: status must be an HTTP status, 100 to 599 (below 400 records completed, '
      '400 and above failed_final); got %', fn, status USING ERRCODE = '22023';
  END IF;
END
$$;

-- Raises 22004/22023 unless lease is a positive interval; returns it in milliseconds.
CREATE OR REPLACE FUNCTION idem.lease_ms(fn text, lease interval) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  ms bigint;
BEGIN
  IF lease IS NULL THEN
    RAISE EXCEPTION '%: lease must not be NULL (an interval, e.g. ''30 seconds'')', fn
      USING ERRCODE = '22004';
  END IF;
  ms := floor(extract(epoch FROM lease) * 1000)::bigint;
  IF ms < 1 THEN
    RAISE EXCEPTION '%: lease must be a positive interval (at least 1 millisecond); got %', fn,
      lease USING ERRCODE = '22023';
  END IF;
  RETURN ms;
END
$$;

-- One length-prefixed field of the headers column: a 4-byte big-endian length, then the bytes.
CREATE OR REPLACE FUNCTION idem.header_field(text) RETURNS bytea LANGUAGE sql IMMUTABLE AS
$$ SELECT int4send(octet_length(convert_to($1, 'UTF8'))) || convert_to($1, 'UTF8') $$;

-- A JSON object of replayable headers ({"Content-Type": "application/json"}; an array of strings
-- for a header sent several times) as the bytes of the headers column. NULL and {} are none.
-- Simple expressions only (keyvalue() gives the pairs as one array): a query here would cost as
-- much as the UPDATE that stores the result.
CREATE OR REPLACE FUNCTION idem.encode_headers(fn text, headers jsonb) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  out bytea := '';
  pairs jsonb;
  hname text;
  val jsonb;
  item jsonb;
  n integer;
BEGIN
  IF headers IS NULL OR headers = '{}'::jsonb THEN RETURN ''; END IF;
  IF jsonb_typeof(headers) <> 'object' THEN
    RAISE EXCEPTION '%: headers must be a JSON object of header names to strings (or arrays of '
      'strings); got a JSON %', fn, jsonb_typeof(headers) USING ERRCODE = '22023';
  END IF;
  pairs := jsonb_path_query_array(headers, '$.keyvalue()');
  FOR p IN 0 .. jsonb_array_length(pairs) - 1 LOOP
    hname := pairs -> p ->> 'key';
    val := pairs -> p -> 'value';
    IF hname !~ '^[!#$%&''*+.^_`|~0-9A-Za-z-]+$' THEN
      RAISE EXCEPTION '%: header name "%" is not an HTTP token (letters, digits, '
        '!#$%%&''*+-.^_`|~)', fn, hname USING ERRCODE = '22023';
    END IF;
    IF jsonb_typeof(val) = 'array' THEN
      n := jsonb_array_length(val);
    ELSE
      n := 1;
      val := jsonb_build_array(val);
    END IF;
    FOR v IN 0 .. n - 1 LOOP
      item := val -> v;
      IF jsonb_typeof(item) <> 'string' THEN
        RAISE EXCEPTION '%: header "%" must have a string value (or an array of strings)', fn,
          hname USING ERRCODE = '22023';
      END IF;
      IF item #>> '{}' ~ '[\x01-\x08\x0a-\x1f\x7f]' THEN
        RAISE EXCEPTION '%: header "%" has a control character in its value (only tab is allowed)',
          fn, hname USING ERRCODE = '22023';
      END IF;
      out := out || idem.header_field(hname) || idem.header_field(item #>> '{}');
    END LOOP;
  END LOOP;
  RETURN out;
END
$$;

-- encode_headers, remembering its last answer for this session in two settings
-- (idem.headers_memo_json, idem.headers_memo_bytes), which idem.finish reads first: a service
-- records the same headers time and again, and the lookup costs a fraction of the encoding, which
-- otherwise takes about a tenth of a begin-insert-finish transaction's CPU. A setting changed in a
-- transaction that rolls back is restored, which only forgets the memo.
CREATE OR REPLACE FUNCTION idem.encode_headers_remembered(fn text, headers jsonb) RETURNS bytea
LANGUAGE plpgsql AS $$
DECLARE
  out bytea := idem.encode_headers(fn, headers);
BEGIN
  PERFORM set_config('idem.headers_memo_json', headers::text, false),
          set_config('idem.headers_memo_bytes', encode(out, 'hex'), false);
  RETURN out;
END
$$;

-- The bytes of the headers column as encode_headers' JSON object (a repeated name as an array).
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
    BEGIN
      text_of := convert_from(field, 'UTF8');
    EXCEPTION WHEN character_not_in_repertoire OR untranslatable_character THEN
      text_of := encode(field, 'escape');  -- a value another writer stored in another charset
    END;
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

-- The owner written by idem.begin: this transaction's alone (its 64-bit id never recurs), which is
-- how idem.finish knows the claim is this transaction's.
CREATE OR REPLACE FUNCTION idem.transaction_owner(xid xid8) RETURNS text LANGUAGE sql IMMUTABLE AS
$$ SELECT 'sql:xact:' || xid::text $$;

-- The claim shared by idem.begin (in_transaction: the row is the caller's transaction's until it
-- commits) and idem.acquire (a lease of lease_ms). A unique-constraint INSERT; when a row is in
-- the way, it is read: an expired one is replaced, a lapsed in_progress one of the same
-- fingerprint is taken over, one deleted meanwhile is inserted again, a live one decides.
-- A concurrent claim of the key by another open transaction makes the INSERT wait for its
-- COMMIT (the row is then read: replay) or ROLLBACK (the INSERT goes in: run).
CREATE OR REPLACE FUNCTION idem.claim(fn text, key text, fingerprint text, tenant text,
                                      lease_ms bigint, owner text, in_transaction boolean,
                                      OUT decision text, OUT fence bigint, OUT status integer,
                                      OUT headers jsonb, OUT body bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  now bigint := idem.now_ms();
  keep bigint := greatest(idem.retention_ms(), lease_ms);
  found_row record;
BEGIN
  FOR round IN 1 .. 16 LOOP
    INSERT INTO idem_keys AS k (tenant, key, fingerprint, state, fence, owner, lease_until_ms,
                                created_ms, updated_ms, expires_ms)
    VALUES (claim.tenant, claim.key, claim.fingerprint, 1, nextval('idem_fence_seq'), claim.owner,
            now + lease_ms, now, now, now + keep)
    ON CONFLICT (tenant, key) DO NOTHING
    RETURNING k.fence INTO claim.fence;
    IF claim.fence IS NOT NULL THEN
      decision := 'run';
      RETURN;
    END IF;
    -- A committed row blocked the INSERT; READ COMMITTED lets this statement see it.
    SELECT k.fingerprint, k.state, k.fence, k.owner, k.lease_until_ms, k.expires_ms, k.status,
           k.headers, k.body
      INTO found_row FROM idem_keys AS k WHERE k.tenant = claim.tenant AND k.key = claim.key;
    IF NOT FOUND THEN CONTINUE; END IF;  -- deleted (released, swept) since: insert again
    IF found_row.expires_ms <= now THEN
      UPDATE idem_keys AS k SET fingerprint = claim.fingerprint, state = 1,
             fence = nextval('idem_fence_seq'), owner = claim.owner,
             lease_until_ms = now + lease_ms, status = 0, headers = '', body = '',
             created_ms = now, updated_ms = now, expires_ms = now + keep, claim_nonce = NULL
       WHERE k.tenant = claim.tenant AND k.key = claim.key AND k.fence = found_row.fence
         AND k.expires_ms <= now
      RETURNING k.fence INTO claim.fence;
      IF claim.fence IS NOT NULL THEN
        decision := 'run';
        RETURN;
      END IF;
      CONTINUE;  -- replaced or deleted by someone else first
    END IF;
    IF found_row.fingerprint <> claim.fingerprint THEN
      decision := 'mismatch';
      RETURN;
    END IF;
    IF found_row.state <> 1 THEN
      decision := 'replay';
      status := found_row.status;
      headers := idem.decode_headers(found_row.headers);
      body := found_row.body;
      RETURN;
    END IF;
    -- in_progress: live, or this very transaction's own claim (never taken over by itself).
    IF found_row.lease_until_ms > now OR (in_transaction AND found_row.owner = claim.owner) THEN
      decision := 'in_progress';
      RETURN;
    END IF;
    UPDATE idem_keys AS k SET fence = nextval('idem_fence_seq'), owner = claim.owner,
           lease_until_ms = now + lease_ms, updated_ms = now,
           expires_ms = greatest(k.expires_ms, now + lease_ms), status = 0, headers = '',
           body = '', claim_nonce = NULL
     WHERE k.tenant = claim.tenant AND k.key = claim.key AND k.fence = found_row.fence
       AND k.state = 1 AND k.fingerprint = claim.fingerprint AND k.lease_until_ms <= now
       AND k.expires_ms > now
    RETURNING k.fence INTO claim.fence;
    IF claim.fence IS NOT NULL THEN
      decision := 'run';
      RETURN;
    END IF;
  END LOOP;
  RAISE EXCEPTION '%: the record of key ''%'' (tenant ''%'') changed under 16 attempts in a row; '
    'retry', fn, claim.key, claim.tenant USING ERRCODE = '40001';
END
$$;

-- In the caller's transaction: run (claimed: do the business writes, idem.finish, COMMIT),
-- replay (the recorded outcome comes back), mismatch (another request's key), in_progress (held
-- in lease mode). A ROLLBACK leaves no trace of the claim. docs/sql.md has the decision table.
CREATE OR REPLACE FUNCTION idem.begin(key text, fingerprint text, tenant text DEFAULT '')
RETURNS TABLE (decision text, status integer, headers jsonb, body bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  now bigint := idem.now_ms();
  claimer text := idem.transaction_owner(pg_current_xact_id());
  c record;
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
  -- The common case, a new key, here; everything else in idem.claim (which tries this again).
  -- A claim committed unfinished (never by a correct caller) holds as a lease of 30 s, the C++
  -- transaction mode's, and is then taken over by the same request.
  INSERT INTO idem_keys AS k (tenant, key, fingerprint, state, fence, owner, lease_until_ms,
                              created_ms, updated_ms, expires_ms)
  VALUES (begin.tenant, begin.key, begin.fingerprint, 1, nextval('idem_fence_seq'), claimer,
          now + 30000, now, now, now + greatest(idem.retention_ms(), 30000))
  ON CONFLICT (tenant, key) DO NOTHING;
  IF FOUND THEN
    decision := 'run';
    RETURN NEXT;
    RETURN;
  END IF;
  SELECT * INTO c FROM idem.claim('idem.begin', begin.key, begin.fingerprint, begin.tenant, 30000,
                                   claimer, true);
  decision := c.decision;
  status := c.status;
  headers := c.headers;
  body := c.body;
  RETURN NEXT;
END
$$;

-- Records the outcome of the key this transaction claimed with idem.begin: status below 400
-- completed, 400 and above failed_final; replayed for idem.retention from now.
CREATE OR REPLACE FUNCTION idem.finish(key text, status integer, headers jsonb DEFAULT '{}',
                                       body bytea DEFAULT NULL, tenant text DEFAULT '')
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
  xid xid8 := pg_current_xact_id_if_assigned();
  encoded bytea;
  now bigint;
BEGIN
  -- The rules of idem.check_scope and idem.check_status, checked inline first.
  IF key IS NULL OR length(key) > 255 OR key !~ '^[!-~]+$' OR tenant IS NULL
     OR status IS NULL OR status < 100 OR status > 599
     OR (tenant <> '' AND (octet_length(tenant) > 255 OR tenant ~ '[\x01-\x1f\x7f]')) THEN
    PERFORM idem.check_scope('idem.finish', key, tenant);
    PERFORM idem.check_status('idem.finish', status);
  END IF;
  encoded := CASE WHEN headers IS NULL OR headers = '{}'::jsonb THEN ''::bytea
                  WHEN current_setting('idem.headers_memo_json', true) = headers::text
                    THEN decode(current_setting('idem.headers_memo_bytes', true), 'hex')
                  ELSE idem.encode_headers_remembered('idem.finish', headers) END;
  now := idem.now_ms();
  IF xid IS NOT NULL THEN
    UPDATE idem_keys AS k SET state = CASE WHEN finish.status < 400 THEN 2 ELSE 3 END,
           status = finish.status, headers = encoded, body = coalesce(finish.body, ''),
           updated_ms = now, expires_ms = now + idem.retention_ms()
     WHERE k.tenant = finish.tenant AND k.key = finish.key AND k.state = 1
       AND k.owner = idem.transaction_owner(xid);
    IF FOUND THEN RETURN; END IF;
  END IF;
  RAISE EXCEPTION 'idem.finish: this transaction holds no claim on key ''%'' (tenant ''%''): '
    'call idem.begin first and finish only after it returned run, in the same transaction, '
    'and not after a ROLLBACK (TO SAVEPOINT) that undid the claim', finish.key, finish.tenant
    USING ERRCODE = 'IDEM2';
END
$$;

-- Lease mode, each call its own transaction: run (with the fence every later call passes),
-- replay, mismatch, in_progress. A lapsed lease of the same fingerprint is taken over (run, a
-- larger fence).
CREATE OR REPLACE FUNCTION idem.acquire(key text, fingerprint text, lease interval,
                                        tenant text DEFAULT '')
RETURNS TABLE (decision text, fence bigint, status integer, headers jsonb, body bytea)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
  c record;
  ms bigint;
BEGIN
  PERFORM idem.check_scope('idem.acquire', key, tenant);
  PERFORM idem.check_fingerprint('idem.acquire', fingerprint);
  ms := idem.lease_ms('idem.acquire', lease);
  SELECT * INTO c FROM idem.claim('idem.acquire', key, fingerprint, tenant, ms,
                                   'sql:lease:pid:' || pg_backend_pid(), false);
  decision := c.decision;
  fence := c.fence;
  status := c.status;
  headers := c.headers;
  body := c.body;
  RETURN NEXT;
END
$$;

-- The IDEM1 error of a fenced write that changed nothing, naming who holds the key now.
CREATE OR REPLACE FUNCTION idem.raise_stale(fn text, key text, tenant text, fence bigint)
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
  now_row record;
BEGIN
  SELECT k.state, k.fence INTO now_row FROM idem_keys AS k
   WHERE k.tenant = raise_stale.tenant AND k.key = raise_stale.key
     AND k.expires_ms > idem.now_ms();
  RAISE EXCEPTION '%: fence % no longer holds key ''%'' (tenant ''%''): %; nothing was changed',
    fn, fence, key, tenant,
    CASE WHEN NOT FOUND THEN 'the key has no live record (released, purged or expired)'
         WHEN now_row.state = 1 THEN format('it is in_progress with fence %s (another claim '
                                            'took it over)', now_row.fence)
         ELSE format('it is finished (%s) with fence %s',
                     CASE WHEN now_row.state = 2 THEN 'completed' ELSE 'failed_final' END,
                     now_row.fence) END
    USING ERRCODE = 'IDEM1';
END
$$;

-- Extends the lease held with fence to now + lease; returns the lease's new end.
CREATE OR REPLACE FUNCTION idem.heartbeat(key text, fence bigint, lease interval,
                                          tenant text DEFAULT '')
RETURNS timestamptz LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
  ms bigint;
  now bigint;
BEGIN
  PERFORM idem.check_scope('idem.heartbeat', heartbeat.key, heartbeat.tenant);
  ms := idem.lease_ms('idem.heartbeat', heartbeat.lease);
  now := idem.now_ms();
  UPDATE idem_keys AS k SET lease_until_ms = now + ms, updated_ms = now,
         expires_ms = greatest(k.expires_ms, now + ms)
   WHERE k.tenant = heartbeat.tenant AND k.key = heartbeat.key AND k.fence = heartbeat.fence
     AND k.state = 1 AND k.expires_ms > now;
  IF NOT FOUND THEN
    PERFORM idem.raise_stale('idem.heartbeat', heartbeat.key, heartbeat.tenant, heartbeat.fence);
  END IF;
  RETURN to_timestamp((now + ms) / 1000.0);
END
$$;

-- Records the outcome of the claim held with fence (below 400 completed, else failed_final). A
-- retry of a complete that was applied (its acknowledgement lost) finds its own outcome: OK.
CREATE OR REPLACE FUNCTION idem.complete(key text, fence bigint, status integer,
                                         headers jsonb DEFAULT '{}', body bytea DEFAULT NULL,
                                         tenant text DEFAULT '')
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
  encoded bytea;
  now bigint;
  new_state smallint := CASE WHEN complete.status < 400 THEN 2 ELSE 3 END;
BEGIN
  PERFORM idem.check_scope('idem.complete', complete.key, complete.tenant);
  PERFORM idem.check_status('idem.complete', complete.status);
  encoded := idem.encode_headers('idem.complete', complete.headers);
  now := idem.now_ms();
  UPDATE idem_keys AS k SET state = new_state, status = complete.status, headers = encoded,
         body = coalesce(complete.body, ''), updated_ms = now,
         expires_ms = now + idem.retention_ms()
   WHERE k.tenant = complete.tenant AND k.key = complete.key AND k.fence = complete.fence
     AND k.state = 1 AND k.expires_ms > now;
  IF FOUND THEN RETURN; END IF;
  PERFORM 1 FROM idem_keys AS k
   WHERE k.tenant = complete.tenant AND k.key = complete.key AND k.fence = complete.fence
     AND k.state = new_state AND k.status = complete.status AND k.headers = encoded
     AND k.body = coalesce(complete.body, '') AND k.expires_ms > now;
  IF FOUND THEN RETURN; END IF;
  PERFORM idem.raise_stale('idem.complete', complete.key, complete.tenant, complete.fence);
END
$$;

-- Gives the claim held with fence up after a transient failure: the next acquire runs again. A
-- key with no live record (released already) is fine.
CREATE OR REPLACE FUNCTION idem.release(key text, fence bigint, tenant text DEFAULT '')
RETURNS void LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
  now bigint;
BEGIN
  PERFORM idem.check_scope('idem.release', release.key, release.tenant);
  now := idem.now_ms();
  DELETE FROM idem_keys AS k
   WHERE k.tenant = release.tenant AND k.key = release.key AND k.fence = release.fence
     AND k.state = 1 AND k.expires_ms > now;
  IF FOUND THEN RETURN; END IF;
  PERFORM 1 FROM idem_keys AS k
   WHERE k.tenant = release.tenant AND k.key = release.key AND k.expires_ms > now;
  IF FOUND THEN
    PERFORM idem.raise_stale('idem.release', release.key, release.tenant, release.fence);
  END IF;
END
$$;
$functions$;
END
$migration$;
