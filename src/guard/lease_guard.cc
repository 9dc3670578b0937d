#include "idem/lease_guard.h"

#include <fmt/format.h>

#include "common/status_macros.h"
#include "guard/replay.h"

namespace idem {

LeasedKey::LeasedKey(Store& store, Scope scope, int64_t fence, const LeaseOptions& options,
                     bool taken_over)
    : store_(&store),
      scope_(std::move(scope)),
      fence_(fence),
      options_(&options),
      taken_over_(taken_over) {}

absl::Status LeasedKey::Heartbeat() { return store_->Heartbeat(scope_, fence_, options_->lease); }

absl::StatusOr<GuardResult> LeasedKey::Finish(const StoredResponse& response) {
  GuardResult result{.response = response};
  switch (options_->classifier.Classify(response.status)) {
    case OutcomeClass::kTransient:
      // Never cache a transient outcome: the key becomes absent and the next arrival runs again.
      IDEM_RETURN_IF_ERROR(store_->Release(scope_, fence_));
      result.state = KeyState::kInProgress;
      return result;
    case OutcomeClass::kFailedFinal:
      IDEM_RETURN_IF_ERROR(store_->FailFinal(scope_, fence_, response));
      result.state = KeyState::kFailedFinal;
      return result;
    case OutcomeClass::kCompleted:
      IDEM_RETURN_IF_ERROR(store_->Complete(scope_, fence_, response));
      result.state = KeyState::kCompleted;
      return result;
  }
  return absl::InternalError("outcome class out of range");
}

absl::Status LeasedKey::Release() { return store_->Release(scope_, fence_); }

LeaseGuard::LeaseGuard(Store& store, LeaseOptions options)
    : store_(store), options_(std::move(options)) {
  if (options_.owner.empty()) options_.owner = guard_internal::DefaultOwner();
}

absl::StatusOr<LeaseAcquisition> LeaseGuard::Acquire(const Scope& scope,
                                                     std::string_view fingerprint) {
  ClaimRequest request{.scope = scope,
                       .fingerprint = std::string(fingerprint),
                       .owner = options_.owner,
                       .lease = options_.lease};
  // A record can vanish between our claim and our takeover (its holder released it); the claim
  // is then simply tried again. Three rounds make that race vanishingly unlikely to surface.
  for (int round = 0; round < 3; ++round) {
    IDEM_ASSIGN_OR_RETURN(ClaimResult claim, store_.Claim(request));
    LeaseAcquisition acquisition;
    if (claim.claimed) {
      acquisition.key.emplace(store_, scope, claim.record.fence, options_, false);
      return acquisition;
    }
    const KeyRecord& found = claim.record;
    if (found.state != KeyState::kInProgress || found.fingerprint != fingerprint) {
      IDEM_ASSIGN_OR_RETURN(GuardResult replay, guard_internal::ReplayOf(found, fingerprint));
      acquisition.replay = std::move(replay);
      return acquisition;
    }
    // In progress: the store takes it over only if the holder's lease has lapsed.
    absl::StatusOr<KeyRecord> taken = store_.TakeOver(request, found.fence);
    if (taken.ok()) {
      acquisition.key.emplace(store_, scope, taken->fence, options_, true);
      return acquisition;
    }
    if (absl::IsAborted(taken.status()))
      return guard_internal::ReplayOf(found, fingerprint).status();
    if (!absl::IsNotFound(taken.status())) return taken.status();
  }
  return absl::AbortedError(fmt::format(
      "idempotency key '{}' changed hands repeatedly while being claimed; retry later", scope.key));
}

}  // namespace idem
