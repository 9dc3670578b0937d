#include "idem/guard.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <thread>

#include "common/status_macros.h"
#include "guard/replay.h"

namespace idem {
namespace {

// Savepoints: one around each call of a batch (claim + effect + outcome), so a batch can undo one
// call; one before the effect, so a deterministic failure keeps the claim but not the effect's
// writes.
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

struct CallArgs {
  const Scope& scope;
  std::string_view fingerprint;
  const Effect& effect;
  // true: the call runs inside its own savepoint kCallSavepoint (a batch), which undoing the
  // call rolls back to. false: the call has the transaction to itself (Run), and its caller
  // rolls the whole transaction back instead, so the savepoint would only cost statements.
  bool call_savepoint;
  // Set when undoing the call failed: the transaction can then hold part of the call and must
  // not be committed.
  bool* undo_failed = nullptr;
};

// Undoes the call's claim and writes (when it has its own savepoint) and returns `why`.
absl::Status UndoCall(StoreTransaction& tx, const CallArgs& call, absl::Status why) {
  if (!call.call_savepoint) return why;
  absl::Status undone = tx.RollbackToSavepoint(kCallSavepoint);
  if (undone.ok()) undone = tx.ReleaseSavepoint(kCallSavepoint);
  if (!undone.ok()) {
    if (call.undo_failed != nullptr) *call.undo_failed = true;
    return undone;
  }
  return why;
}

absl::Status EndCall(StoreTransaction& tx, const CallArgs& call) {
  return call.call_savepoint ? tx.ReleaseSavepoint(kCallSavepoint) : absl::OkStatus();
}

// Claims, runs the effect and records its outcome, all inside `tx`. With call_savepoint, `tx`
// stays usable whatever the call's outcome.
absl::StatusOr<GuardResult> RunCall(StoreTransaction& tx, const CallArgs& call,
                                    const GuardOptions& options) {
  absl::StatusOr<ClaimResult> claim = tx.Claim(call.scope, call.fingerprint, options.owner);
  if (!claim.ok()) return UndoCall(tx, call, claim.status());
  if (!claim->claimed) {
    IDEM_RETURN_IF_ERROR(EndCall(tx, call));
    return guard_internal::ReplayOf(claim->record, call.fingerprint);
  }
  IDEM_RETURN_IF_ERROR(tx.Savepoint(kEffectSavepoint));
  absl::StatusOr<StoredResponse> response = call.effect(tx);
  if (!response.ok()) return UndoCall(tx, call, response.status());
  GuardResult result{.response = *std::move(response)};
  switch (options.classifier.Classify(result.response.status)) {
    case OutcomeClass::kTransient:
      IDEM_RETURN_IF_ERROR(UndoCall(tx, call, absl::OkStatus()));
      result.state = KeyState::kInProgress;
      return result;
    case OutcomeClass::kFailedFinal:
      if (absl::Status undone = tx.RollbackToSavepoint(kEffectSavepoint); !undone.ok()) {
        return UndoCall(tx, call, undone);
      }
      result.state = KeyState::kFailedFinal;
      break;
    case OutcomeClass::kCompleted:
      result.state = KeyState::kCompleted;
      break;
  }
  absl::Status finished = tx.Finish(call.scope, claim->record.fence, result.state, result.response);
  if (!finished.ok()) return UndoCall(tx, call, finished);
  IDEM_RETURN_IF_ERROR(EndCall(tx, call));
  return result;
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
  // The call has the transaction to itself: anything to undo is undone by rolling it all back.
  absl::StatusOr<GuardResult> result =
      RunCall(*tx, {scope, fingerprint, effect, /*call_savepoint=*/false}, options_);
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
    bool undo_failed = false;
    results.push_back(RunInTransaction(*tx, call, &undo_failed));
    // A lost connection or a serialization failure dooms the whole transaction, and so does a
    // call that could not be undone: committing would keep part of it.
    if (undo_failed || (!results.back().ok() && absl::IsUnavailable(results.back().status()))) {
      (void)tx->Rollback();
      return results.back().status();
    }
  }
  IDEM_RETURN_IF_ERROR(tx->Commit());
  return results;
}

absl::StatusOr<GuardResult> Guard::RunInTransaction(StoreTransaction& tx, const GuardCall& call,
                                                    bool* undo_failed) {
  if (absl::Status opened = tx.Savepoint(kCallSavepoint); !opened.ok()) {
    *undo_failed = true;
    return opened;
  }
  return RunCall(tx,
                 {call.scope, call.fingerprint, call.effect, /*call_savepoint=*/true, undo_failed},
                 options_);
}

}  // namespace idem
