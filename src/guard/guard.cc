#include "idem/guard.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/status_macros.h"
#include "guard/replay.h"

namespace idem {
namespace {

constexpr std::string_view kEffectSavepoint = "idem_effect";

// Full-jitter backoff between the guard's own retries of a transient store error: the store is
// contended, so spreading the retries out matters more than their exact spacing.
void SleepBeforeRetry(int attempt) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const int64_t ceiling_ms = std::min<int64_t>(1000, int64_t{10} << std::min(attempt, 10));
  std::uniform_int_distribution<int64_t> pick(0, ceiling_ms);
  std::this_thread::sleep_for(Millis(pick(rng)));
}

}  // namespace

Guard::Guard(Store& store, GuardOptions options) : store_(store), options_(std::move(options)) {
  if (options_.owner.empty()) options_.owner = guard_internal::DefaultOwner();
}

absl::StatusOr<GuardResult> Guard::Run(const Scope& scope, std::string_view fingerprint,
                                       const Effect& effect) {
  for (int attempt = 0;; ++attempt) {
    absl::StatusOr<GuardResult> result = RunOnce(scope, fingerprint, effect);
    if (result.ok() || !absl::IsUnavailable(result.status()) ||
        attempt >= options_.transient_retries) {
      return result;
    }
    SleepBeforeRetry(attempt);
  }
}

absl::StatusOr<GuardResult> Guard::RunOnce(const Scope& scope, std::string_view fingerprint,
                                           const Effect& effect) {
  IDEM_ASSIGN_OR_RETURN(std::unique_ptr<StoreTransaction> tx, store_.Begin());
  IDEM_ASSIGN_OR_RETURN(ClaimResult claim, tx->Claim(scope, fingerprint, options_.owner));
  if (!claim.claimed) {
    // Nothing of ours to keep: end the transaction before answering.
    IDEM_RETURN_IF_ERROR(tx->Rollback());
    return guard_internal::ReplayOf(claim.record, fingerprint);
  }
  const int64_t fence = claim.record.fence;
  IDEM_RETURN_IF_ERROR(tx->Savepoint(kEffectSavepoint));
  absl::StatusOr<StoredResponse> response = effect(*tx);
  if (!response.ok()) {
    IDEM_RETURN_IF_ERROR(tx->Rollback());
    return response.status();
  }
  GuardResult result{.response = *std::move(response)};
  switch (options_.classifier.Classify(result.response.status)) {
    case OutcomeClass::kTransient:
      IDEM_RETURN_IF_ERROR(tx->Rollback());
      result.state = KeyState::kInProgress;
      return result;
    case OutcomeClass::kFailedFinal:
      IDEM_RETURN_IF_ERROR(tx->RollbackToSavepoint(kEffectSavepoint));
      result.state = KeyState::kFailedFinal;
      break;
    case OutcomeClass::kCompleted:
      result.state = KeyState::kCompleted;
      break;
  }
  IDEM_RETURN_IF_ERROR(tx->ReleaseSavepoint(kEffectSavepoint));
  IDEM_RETURN_IF_ERROR(tx->Finish(scope, fence, result.state, result.response));
  IDEM_RETURN_IF_ERROR(tx->Commit());
  return result;
}

}  // namespace idem
