#include "core/key_query.h"

#include <fmt/format.h>

namespace idem {

absl::Status ValidateKeyQuery(const KeyQuery& query) {
  if (query.limit < 1 || query.limit > kMaxListLimit) {
    return absl::InvalidArgumentError(fmt::format(
        "a listing returns 1 to {} records at a time, not {}", kMaxListLimit, query.limit));
  }
  for (const std::optional<Millis>& age : {query.older_than, query.newer_than}) {
    if (age.has_value() && age->count() < 0) {
      return absl::InvalidArgumentError("an age filter cannot be negative");
    }
  }
  return absl::OkStatus();
}

// The defaults for stores that cannot list or purge (idem/store.h).
absl::StatusOr<std::vector<KeyRecord>> Store::List(const KeyQuery&) {
  return absl::UnimplementedError("this store cannot list its keys");
}

absl::Status Store::Purge(const Scope&) {
  return absl::UnimplementedError("this store cannot purge keys");
}

}  // namespace idem
