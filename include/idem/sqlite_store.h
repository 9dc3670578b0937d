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

// Opens (creating if absent) the SQLite database at `path` and applies idem's migrations.
// `uri_query` is the part of a sqlite: URI after '?', e.g. "synchronous=normal" (may be empty).
// Errors: as OpenStore in idem/store.h.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(std::string_view path,
                                                       std::string_view uri_query,
                                                       const StoreOptions& options);

}  // namespace idem

#endif  // IDEM_SQLITE_STORE_H_
