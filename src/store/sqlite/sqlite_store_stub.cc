#include "idem/sqlite_store.h"

namespace idem {
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(std::string_view, std::string_view,
                                                       const StoreOptions&) {
  return absl::UnimplementedError("the SQLite store is not built yet");
}
}  // namespace idem
