#include "core/stale_fence.h"

#include <fmt/format.h>

namespace idem {

absl::Status StaleFenceError(std::string_view operation, const Scope& scope, int64_t fence,
                             const std::optional<KeyRecord>& live) {
  if (!live.has_value()) {
    return absl::AbortedError(fmt::format(
        "{} with fence {}: key '{}' of tenant '{}' is no longer held (absent or expired); the "
        "claim was lost: do not record an outcome",
        operation, fence, scope.key, scope.tenant));
  }
  return absl::AbortedError(fmt::format(
      "{} with fence {}: key '{}' of tenant '{}' is now {} with fence {} (owner '{}'); the claim "
      "was taken over or finished: do not record an outcome",
      operation, fence, scope.key, scope.tenant, KeyStateName(live->state), live->fence,
      live->owner));
}

absl::Status TakeOverMismatchError(const Scope& scope) {
  return absl::FailedPreconditionError(fmt::format(
      "cannot take over key '{}' of tenant '{}': it was claimed for another request (another "
      "fingerprint); a key names one request, send a new key for a new request",
      scope.key, scope.tenant));
}

}  // namespace idem
