// The columns of idem_keys as every statement that returns whole records lists them, in the
// order pg_key_table.cc's record reader expects (RETURNING or SELECT, inside the SQL text).
#ifndef IDEM_STORE_POSTGRES_PG_KEY_COLUMNS_H_
#define IDEM_STORE_POSTGRES_PG_KEY_COLUMNS_H_

#define IDEM_PG_KEY_COLUMNS                                                                 \
  " tenant, key, fingerprint, state, fence, owner, lease_until_ms, status, headers, body, " \
  "created_ms, updated_ms, expires_ms, claim_nonce "

#endif  // IDEM_STORE_POSTGRES_PG_KEY_COLUMNS_H_
