// idem/postgres_store.h: the shared store on PostgreSQL (libpq).
//
// Thread-safety: as idem/store.h.
#ifndef IDEM_POSTGRES_STORE_H_
#define IDEM_POSTGRES_STORE_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/store.h"

namespace idem {

// Connects to the PostgreSQL database named by `conninfo` (a postgresql:// URI or a libpq
// key=value string) and applies idem's migrations (under an advisory lock, so several processes
// may open at once). Errors: as OpenStore in idem/store.h.
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(std::string_view conninfo,
                                                         const StoreOptions& options);

}  // namespace idem

#endif  // IDEM_POSTGRES_STORE_H_
