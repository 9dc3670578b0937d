#include "e2e_store.h"

#include <fmt/format.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"

namespace idem::testing {

absl::StatusOr<E2eStore> E2eStoreFromEnvironment() {
  const char* value = std::getenv("IDEM_E2E_STORE");
  const std::string name = value == nullptr ? "" : value;
  if (name.empty() || name == "sqlite") return E2eStore::kSqlite;
  if (name == "postgres") return E2eStore::kPostgres;
  if (name == "nats") return E2eStore::kNats;
  return absl::InvalidArgumentError(
      fmt::format("IDEM_E2E_STORE={}: not a store (sqlite, postgres or nats)", name));
}

std::string_view E2eStoreName(E2eStore store) {
  switch (store) {
    case E2eStore::kSqlite:
      return "sqlite";
    case E2eStore::kPostgres:
      return "postgres";
    case E2eStore::kNats:
      return "nats";
  }
  return "unknown";
}

}  // namespace idem::testing
