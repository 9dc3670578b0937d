// SQLite's own integrity checks (PRAGMA quick_check / integrity_check), run at open when the URI
// asks for one (integrity=quick|full) and by tools (CheckSqliteIntegrity in idem/sqlite_store.h).
//
// Thread-safety: a function of one connection.
#ifndef IDEM_STORE_SQLITE_SQLITE_INTEGRITY_H_
#define IDEM_STORE_SQLITE_SQLITE_INTEGRITY_H_

#include <string>

#include "absl/status/status.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

// Runs PRAGMA quick_check (`full` false: O(N), skips index-to-table cross checks) or
// integrity_check (`full` true) on `conn`. Writes nothing.
// Errors: DataLoss naming the first problems SQLite found; as FromSqlite when the check cannot run.
absl::Status RunIntegrityCheck(Connection& conn, const std::string& path, bool full);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_SQLITE_INTEGRITY_H_
