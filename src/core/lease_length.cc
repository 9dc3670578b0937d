#include "core/lease_length.h"

#include <fmt/format.h>

namespace idem {

absl::Status CheckLeaseLength(std::chrono::milliseconds lease) {
  if (lease.count() > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("lease is {} ms; give a positive lease, e.g. 30s", lease.count()));
}

}  // namespace idem
