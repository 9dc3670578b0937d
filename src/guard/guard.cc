#include "idem/guard.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/status_macros.h"
#include "guard/replay.h"

namespace idem {
namespace {

// Savepoints: one around each call (claim + effect + outcome), so a batch can undo one call;
// one before the effect, so a deterministic failure keeps the claim but not the effect's writes.
constexpr std::string_view kCallSavepoint = "idem_call";
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

absl::StatusOr<std::vector<absl::StatusOr<GuardResult>>> Guard::RunBatch(
    const std::vector<GuardCall>& calls) {
  for (int attempt = 0;; ++attempt) {
    auto results = RunBatchOnce(calls);
    if (results.ok() || !absl::IsUnavailable(results.status()) ||
        attempt >= options_.transient_retries) {
      return results;
    }
    SleepBeforeRetry(attempt);
  }
}

absl::StatusOr<GuardResult> Guard::RunOnce(const Scope& scope, std::string_view fingerprint,
                                           const Effect& effect) {
  IDEM_ASSIGN_OR_RETURN(std::unique_ptr<StoreTransaction> tx, store_.Begin());
  const GuardCall call{scope, std::string(fingerprint), effect};
  absl::StatusOr<GuardResult> result = RunInTransaction(*tx, call);
  if (!result.ok() || result->replayed || result->state == KeyState::kInProgress) {
    // Nothing of ours to keep: end the transaction without a durable write.
    IDEM_RETURN_IF_ERROR(tx->Rollback());
    return result;
  }
  IDEM_RETURN_IF_ERROR(tx->Commit());
  return result;
}

absl::StatusOr<std::vector<absl::StatusOr<GuardResult>>> Guard::RunBatchOnce(
    const std::vector<GuardCall>& calls) {
  IDEM_ASSIGN_OR_RETURN(std::unique_ptr<StoreTransaction> tx, store_.Begin());
  std::vector<absl::StatusOr<GuardResult>> results;
  results.reserve(calls.size());
  for (const GuardCall& call : calls) {
    results.push_back(RunInTransaction(*tx, call));
    // A lost connection or a serialization failure dooms the whole transaction.
    if (!results.back().ok() && absl::IsUnavailable(results.back().status())) {
      (void)tx->Rollback();
      return results.back().status();
    }
  }
  IDEM_RETURN_IF_ERROR(tx->Commit());
  return results;
}

absl::StatusOr<GuardResult> Guard::RunInTransaction(StoreTransaction& tx, const GuardCall& call) {
  IDEM_RETURN_IF_ERROR(tx.Savepoint(kCallSavepoint));
  // Undoes this call's claim and writes, leaving the transaction usable for the next call.
  auto undo_call = [&tx](absl::Status why) -> absl::Status {
    IDEM_RETURN_IF_ERROR(tx.RollbackToSavepoint(kCallSavepoint));
    IDEM_RETURN_IF_ERROR(tx.ReleaseSavepoint(kCallSavepoint));
    return why;
  };
  absl::StatusOr<ClaimResult> claim = tx.Claim(call.scope, call.fingerprint, options_.owner);
  if (!claim.ok()) return undo_call(claim.status());
  if (!claim->claimed) {
    IDEM_RETURN_IF_ERROR(tx.ReleaseSavepoint(kCallSavepoint));
    return guard_internal::ReplayOf(claim->record, call.fingerprint);
  }
  IDEM_RETURN_IF_ERROR(tx.Savepoint(kEffectSavepoint));
  absl::StatusOr<StoredResponse> response = call.effect(tx);
  if (!response.ok()) return undo_call(response.status());
  GuardResult result{.response = *std::move(response)};
  switch (options_.classifier.Classify(result.response.status)) {
    case OutcomeClass::kTransient:
      IDEM_RETURN_IF_ERROR(undo_call(absl::OkStatus()));
      result.state = KeyState::kInProgress;
      return result;
    case OutcomeClass::kFailedFinal:
      IDEM_RETURN_IF_ERROR(tx.RollbackToSavepoint(kEffectSavepoint));
      result.state = KeyState::kFailedFinal;
      break;
    case OutcomeClass::kCompleted:
      result.state = KeyState::kCompleted;
      break;
  }
  IDEM_RETURN_IF_ERROR(tx.Finish(call.scope, claim->record.fence, result.state, result.response));
  IDEM_RETURN_IF_ERROR(tx.ReleaseSavepoint(kCallSavepoint));
  return result;
}

}  // namespace idem
