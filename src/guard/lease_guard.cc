#include "idem/lease_guard.h"

#include <fmt/format.h>

#include <vector>

#include "common/status_macros.h"
#include "guard/replay.h"

namespace idem {

LeasedKey::LeasedKey(Store& store, Scope scope, const LeaseOptions& options,
                     const LeaseWriteResult& claim)
    : store_(&store),
      scope_(std::move(scope)),
      fence_(claim.record.fence),
      options_(&options),
      taken_over_(claim.taken_over),
      lease_until_ms_(claim.lease_until_ms) {}

absl::StatusOr<LeaseWriteResult> LeasedKey::Write(LeaseWrite write) {
  write.scope = scope_;
  write.fence = fence_;
  IDEM_ASSIGN_OR_RETURN(std::vector<LeaseWriteResult> results,
                        store_->ApplyLeaseBatch({&write, 1}));
  if (results.size() != 1) return absl::InternalError("a batch of one write gave no result");
  IDEM_RETURN_IF_ERROR(results[0].status);
  return std::move(results[0]);
}

absl::StatusOr<int64_t> LeasedKey::Heartbeat() {
  IDEM_ASSIGN_OR_RETURN(LeaseWriteResult beat,
                        Write({.kind = LeaseWrite::Kind::kHeartbeat, .lease = options_->lease}));
  lease_until_ms_ = beat.lease_until_ms;
  return lease_until_ms_;
}

absl::StatusOr<GuardResult> LeasedKey::Finish(const StoredResponse& response) {
  if (finished_.has_value()) {
    if (*finished_with_ == response) return *finished_;
    return absl::FailedPreconditionError(fmt::format(
        "key '{}' was already finished with another response; finish it once", scope_.key));
  }
  GuardResult result{.response = response};
  switch (options_->classifier.Classify(response.status)) {
    case OutcomeClass::kTransient:
      // Never cache a transient outcome: the key becomes absent and the next arrival runs again.
      IDEM_RETURN_IF_ERROR(Release());
      result.state = KeyState::kInProgress;
      break;
    case OutcomeClass::kFailedFinal:
      IDEM_RETURN_IF_ERROR(
          Write({.kind = LeaseWrite::Kind::kFailFinal, .response = response}).status());
      result.state = KeyState::kFailedFinal;
      break;
    case OutcomeClass::kCompleted:
      IDEM_RETURN_IF_ERROR(
          Write({.kind = LeaseWrite::Kind::kComplete, .response = response}).status());
      result.state = KeyState::kCompleted;
      break;
  }
  finished_with_ = response;
  finished_ = result;
  return result;
}

absl::Status LeasedKey::Release() {
  if (released_) return absl::OkStatus();
  absl::Status status = Write({.kind = LeaseWrite::Kind::kRelease}).status();
  // A retry of a release that may have committed: the key is no longer held with this fence,
  // which is all a release asks for.
  if (status.ok() || (release_attempted_ && absl::IsAborted(status))) {
    released_ = true;
    return absl::OkStatus();
  }
  if (absl::IsUnavailable(status)) release_attempted_ = true;
  return status;
}

LeaseGuard::LeaseGuard(Store& store, LeaseOptions options)
    : store_(store), options_(std::move(options)) {
  if (options_.owner.empty()) options_.owner = guard_internal::DefaultOwner();
}

absl::StatusOr<LeaseAcquisition> LeaseGuard::Acquire(const Scope& scope,
                                                     std::string_view fingerprint) {
  const LeaseWrite claim{.kind = LeaseWrite::Kind::kClaim,
                         .scope = scope,
                         .fingerprint = std::string(fingerprint),
                         .owner = options_.owner,
                         .lease = options_.lease};
  IDEM_ASSIGN_OR_RETURN(std::vector<LeaseWriteResult> results, store_.ApplyLeaseBatch({&claim, 1}));
  if (results.size() != 1) return absl::InternalError("a batch of one claim gave no result");
  LeaseWriteResult& result = results[0];
  IDEM_RETURN_IF_ERROR(result.status);
  LeaseAcquisition acquisition;
  if (result.claimed) {
    acquisition.key.emplace(LeasedKey(store_, scope, options_, result));
    return acquisition;
  }
  const KeyRecord& found = result.record;
  if (found.state == KeyState::kInProgress && found.fingerprint == fingerprint) {
    acquisition.in_flight =
        InFlight{.lease_until_ms = found.lease_until_ms, .now_ms = result.now_ms};
    return acquisition;
  }
  IDEM_ASSIGN_OR_RETURN(GuardResult replay, guard_internal::ReplayOf(found, fingerprint));
  acquisition.replay = std::move(replay);
  return acquisition;
}

}  // namespace idem
