// idem/sqlite_store.h: the embedded store, one SQLite file (WAL mode).
//
// Thread-safety: as idem/store.h.
#ifndef IDEM_SQLITE_STORE_H_
#define IDEM_SQLITE_STORE_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/store.h"

namespace idem {

// Opens (creating if absent, unless options.create_if_missing is false) the SQLite database at
// `path` and applies idem's migrations. `uri_query` is the part of a sqlite: URI after '?', e.g.
// "synchronous=normal&integrity=quick" (may be empty). Errors: as OpenStore in idem/store.h.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(std::string_view path,
                                                       std::string_view uri_query,
                                                       const StoreOptions& options);

// Checks the structure of the SQLite database at `path` without writing to it: PRAGMA
// quick_check (`full` false) or integrity_check (`full` true, also cross-checks every index
// against its table; slower). For tools such as `idem keys`; the store may be open meanwhile.
// Errors: NotFound when there is no file; DataLoss naming the first problems found (or when the
// file is not a database); Unavailable when it stayed locked past lock_timeout.
absl::Status CheckSqliteIntegrity(std::string_view path, bool full, Millis lock_timeout);

}  // namespace idem

#endif  // IDEM_SQLITE_STORE_H_
