#include "idem/lease_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "common/status_macros.h"
#include "guard/replay.h"
#include "idem/uuid.h"

namespace idem {
namespace {

// Waits `duration` on `options`' sleeper, or until a stop is requested; false when stopped.
bool WaitBetweenAttempts(const FinishRetryOptions& options, Millis duration) {
  if (options.stop.stop_requested()) return false;
  if (options.sleeper != nullptr) {
    options.sleeper->SleepFor(duration);
  } else {
    std::mutex mu;
    std::condition_variable_any woken;
    std::unique_lock<std::mutex> lock(mu);
    woken.wait_for(lock, options.stop, duration, [] { return false; });
  }
  return !options.stop.stop_requested();
}

absl::Status Unrecorded(absl::StatusCode code, std::string_view why, const Scope& scope,
                        const absl::Status& last) {
  return absl::Status(code, fmt::format("the outcome of key '{}' of tenant '{}' is not recorded "
                                        "yet ({}); the last attempt failed: {}",
                                        scope.key, scope.tenant, why, std::string(last.message())));
}

}  // namespace

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

absl::StatusOr<GuardResult> LeasedKey::FinishRetrying(const StoredResponse& response,
                                                      const FinishRetryOptions& options) {
  const Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  const uint64_t seed =
      options.seed != 0
          ? options.seed
          : static_cast<uint64_t>(fence_) ^
                static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  IDEM_ASSIGN_OR_RETURN(retry::Backoff backoff, retry::Backoff::Create(options.backoff, seed));
  const Millis beat_every =
      options.heartbeat_every.count() > 0 ? options.heartbeat_every : options_->lease / 3;
  const int64_t start = clock.NowMillis();
  int64_t extended_at = start;  // the last lease extension this call saw (the claim's: unknown)
  for (;;) {
    absl::StatusOr<GuardResult> result = Finish(response);
    if (!absl::IsUnavailable(result.status())) return result;
    Millis wait = backoff.NextDelay();
    if (options.deadline.count() > 0) {
      const int64_t left = start + options.deadline.count() - clock.NowMillis();
      if (left <= 0) {
        return Unrecorded(absl::StatusCode::kDeadlineExceeded, "deadline passed", scope_,
                          result.status());
      }
      wait = std::min(wait, Millis(left));
    }
    if (!WaitBetweenAttempts(options, wait)) {
      return Unrecorded(absl::StatusCode::kCancelled, "stopped", scope_, result.status());
    }
    if (clock.NowMillis() - extended_at >= beat_every.count()) {
      // Its failure is left for the next Finish to explain: Aborted on a finished record may
      // only mean that the last attempt recorded this very outcome.
      if (Heartbeat().ok()) extended_at = clock.NowMillis();
    }
  }
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

absl::StatusOr<LeaseWriteResult> LeaseGuard::Claim(const LeaseWrite& claim) {
  IDEM_ASSIGN_OR_RETURN(std::vector<LeaseWriteResult> results, store_.ApplyLeaseBatch({&claim, 1}));
  if (results.size() != 1) return absl::InternalError("a batch of one claim gave no result");
  IDEM_RETURN_IF_ERROR(results[0].status);
  return std::move(results[0]);
}

absl::StatusOr<LeaseAcquisition> LeaseGuard::Acquire(const Scope& scope,
                                                     std::string_view fingerprint,
                                                     StoredResponse note) {
  // A nonce of this acquisition alone: the store recognises a claim of it that went through as
  // this acquisition's own, never as another's, whatever owner label they share (two processes
  // configured alike, or PID 1 of two containers on one host).
  const LeaseWrite claim{.kind = LeaseWrite::Kind::kClaim,
                         .scope = scope,
                         .fingerprint = std::string(fingerprint),
                         .owner = fmt::format("{}/{}", options_.owner, ++acquisitions_),
                         .lease = options_.lease,
                         .response = std::move(note),
                         .claim_nonce = NewClaimNonce()};
  absl::StatusOr<LeaseWriteResult> claimed = Claim(claim);
  // Unavailable: the claim may have gone through with its answer lost. The same claim again is
  // answered from the record: claimed if it is this acquisition's.
  if (absl::IsUnavailable(claimed.status())) claimed = Claim(claim);
  IDEM_RETURN_IF_ERROR(claimed.status());
  LeaseWriteResult& result = *claimed;
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
