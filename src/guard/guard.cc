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
  // The store's own verdict comes first: an effect cannot vouch for a transaction the database
  // (or the effect, through the native handle) ended or broke.
  IDEM_RETURN_IF_ERROR(tx.Doomed());
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
    bool retryable = false;
    absl::StatusOr<GuardResult> result = RunOnce(scope, fingerprint, effect, &retryable);
    if (result.ok() || !retryable || attempt >= options_.transient_retries) return result;
    SleepBeforeRetry(attempt);
  }
}

absl::StatusOr<std::vector<absl::StatusOr<GuardResult>>> Guard::RunBatch(
    const std::vector<GuardCall>& calls) {
  for (int attempt = 0;; ++attempt) {
    bool retryable = false;
    auto results = RunBatchOnce(calls, &retryable);
    if (results.ok() || !retryable || attempt >= options_.transient_retries) return results;
    SleepBeforeRetry(attempt);
  }
}

namespace {

// Whether a failed attempt may be retried: only for the store's own transient failure (Begin
// could not start, or the store doomed the transaction with Unavailable), never for an error the
// effect returned, whatever its code.
bool StoreFailedTransiently(const absl::Status& doomed) { return absl::IsUnavailable(doomed); }

}  // namespace

absl::StatusOr<GuardResult> Guard::RunOnce(const Scope& scope, std::string_view fingerprint,
                                           const Effect& effect, bool* retryable) {
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store_.Begin();
  if (!tx.ok()) {
    *retryable = StoreFailedTransiently(tx.status());
    return tx.status();
  }
  // The call has the transaction to itself: anything to undo is undone by rolling it all back.
  absl::StatusOr<GuardResult> result =
      RunCall(**tx, {scope, fingerprint, effect, /*call_savepoint=*/false}, options_);
  if (!result.ok() || result->replayed || result->state == KeyState::kInProgress) {
    *retryable = !result.ok() && StoreFailedTransiently((*tx)->Doomed());
    // Nothing of ours to keep: end the transaction without a durable write.
    IDEM_RETURN_IF_ERROR((*tx)->Rollback());
    return result;
  }
  if (absl::Status committed = (*tx)->Commit(); !committed.ok()) {
    *retryable = StoreFailedTransiently((*tx)->Doomed());
    return committed;
  }
  return result;
}

absl::StatusOr<std::vector<absl::StatusOr<GuardResult>>> Guard::RunBatchOnce(
    const std::vector<GuardCall>& calls, bool* retryable) {
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store_.Begin();
  if (!tx.ok()) {
    *retryable = StoreFailedTransiently(tx.status());
    return tx.status();
  }
  std::vector<absl::StatusOr<GuardResult>> results;
  results.reserve(calls.size());
  for (const GuardCall& call : calls) {
    bool undo_failed = false;
    results.push_back(RunInTransaction(**tx, call, &undo_failed));
    // A transaction the store doomed (lost connection, serialization failure, disk full, a
    // failed savepoint statement) cannot commit, and neither can one holding part of a call.
    // An effect's own error, whatever its code, is only that call's result.
    absl::Status doomed = (*tx)->Doomed();
    if (undo_failed || !doomed.ok()) {
      (void)(*tx)->Rollback();
      *retryable = StoreFailedTransiently(doomed);
      if (!doomed.ok()) return doomed;
      return results.back().ok() ? absl::InternalError("a call of the batch could not be undone")
                                 : results.back().status();
    }
  }
  if (absl::Status committed = (*tx)->Commit(); !committed.ok()) {
    *retryable = StoreFailedTransiently((*tx)->Doomed());
    return committed;
  }
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

absl::StatusOr<GuardResult> RunOnceIn(StoreTransaction& tx, const Scope& scope,
                                      std::string_view fingerprint, const Effect& effect,
                                      const GuardOptions& options) {
  // The call gets a savepoint of its own: undoing it must leave the caller's writes in place.
  IDEM_RETURN_IF_ERROR(tx.Savepoint(kCallSavepoint));
  const CallArgs call{scope, fingerprint, effect, /*call_savepoint=*/true};
  if (!options.owner.empty()) return RunCall(tx, call, options);
  static const std::string* const kOwner = new std::string(guard_internal::DefaultOwner());
  GuardOptions named = options;
  named.owner = *kOwner;
  return RunCall(tx, call, named);
}

}  // namespace idem
