// Translates SQLite result codes into libidem's absl::Status codes, in one place.
//
// Thread-safety: stateless; call from any thread (the sqlite3* passed in must be the caller's).
#ifndef IDEM_STORE_SQLITE_SQLITE_ERROR_H_
#define IDEM_STORE_SQLITE_SQLITE_ERROR_H_

#include <sqlite3.h>

#include <string_view>

#include "absl/status/status.h"

namespace idem::sqlite {

// Returns OK for SQLITE_OK, SQLITE_ROW and SQLITE_DONE; otherwise the status whose code carries
// the meaning of `rc` (an extended result code, or a primary one, read as `db`'s extended error
// code when that is of the same primary code):
//   BUSY, LOCKED                        → Unavailable (another connection holds the lock)
//   CONSTRAINT_PRIMARYKEY / _UNIQUE     → AlreadyExists
//   other CONSTRAINT (CHECK, NOT NULL…) → InvalidArgument (the database rejected the values)
//   CORRUPT, NOTADB                     → DataLoss
//   READONLY, CANTOPEN, PERM, AUTH      → PermissionDenied
//   anything else                       → Internal
// The message names `what` (the operation), SQLite's own message from `db` (may be null) and,
// where there is one, what the user can do about it.
absl::Status FromSqlite(int rc, sqlite3* db, std::string_view what);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_SQLITE_ERROR_H_
