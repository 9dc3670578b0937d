#include "idem/postgres_store.h"

namespace idem {
absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(std::string_view, const StoreOptions&) {
  return absl::UnimplementedError("the PostgreSQL store is not built yet");
}
}  // namespace idem
