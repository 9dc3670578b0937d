#include "core/retried_write.h"

#include "core/stale_fence.h"

namespace idem {

bool IsOwnClaim(const LeaseWrite& write, const KeyRecord& found) {
  return write.kind == LeaseWrite::Kind::kClaim && write.unique_owner &&
         found.state == KeyState::kInProgress && found.owner == write.owner &&
         found.fingerprint == write.fingerprint;
}

LeaseWriteResult OwnClaimResult(const KeyRecord& found, int64_t now_ms) {
  return {.claimed = true,
          .taken_over = found.created_ms != found.updated_ms,
          .record = found,
          .lease_until_ms = found.lease_until_ms,
          .now_ms = now_ms};
}

absl::Status UnchangedRelease(const LeaseWrite& write, const std::optional<KeyRecord>& found) {
  if (!found.has_value()) return absl::OkStatus();
  return StaleFenceError("release", write.scope, write.fence, found);
}

}  // namespace idem
