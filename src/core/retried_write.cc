#include "core/retried_write.h"

#include "core/stale_fence.h"

namespace idem {

bool IsOwnClaim(const LeaseWrite& write, const KeyRecord& found) {
  // The nonce alone: an owner label may be shared by two claimers (idem/store.h, LeaseWrite).
  return write.kind == LeaseWrite::Kind::kClaim && !write.claim_nonce.empty() &&
         found.state == KeyState::kInProgress && found.claim_nonce == write.claim_nonce &&
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
