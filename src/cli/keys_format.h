// How `idem keys` prints key records: one line per record for people, or JSON for scripts
// (a contract: docs/keys.md; never rename a field).
//
// Thread-safety: pure functions.
#ifndef IDEM_CLI_KEYS_FORMAT_H_
#define IDEM_CLI_KEYS_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "idem/record.h"

namespace idem::cli {

// "TENANT  KEY  STATE  AGE  STATUS  EXPIRES-IN" columns, a header line first; `now_ms` is the
// moment ages and expiries are counted from. An empty tenant prints as "-".
std::string FormatKeyTable(const std::vector<KeyRecord>& records, int64_t now_ms);

// Every field of one record, one "name: value" line each, then the stored response's headers
// and body (as is when it is UTF-8 text, else its size); for an in_progress claim of a route with
// `recover`, its note: method, path, headers and sizes, never a credential (docs/keys.md).
std::string FormatKeyDetail(const KeyRecord& record, int64_t now_ms);

// One JSON object per record: tenant, key, state, fingerprint, fence, owner, lease_until_ms,
// created_ms, updated_ms, expires_ms, expired, and (with `with_response`) response: status,
// headers [[name, value]...], and body (UTF-8 text) or body_base64; for an in_progress claim
// with a note (with `with_response`), note: method, path, query_bytes, attempts, headers
// [[name, value or null when withheld]...], body_bytes.
std::string KeyRecordJson(const KeyRecord& record, int64_t now_ms, bool with_response);

}  // namespace idem::cli

#endif  // IDEM_CLI_KEYS_FORMAT_H_
