// idem/guard.h: run an effect once per idempotency key, in the key's own transaction
// (docs/design.md §2).
//
//   BEGIN → claim the key (unique-constraint INSERT) → SAVEPOINT → the caller's effect on the same
//   transaction → record the outcome → COMMIT
//
// so the effect, the key and the stored response commit together or not at all. Every later
// arrival of the key gets the stored response back without running the effect. RunOnceIn does
// the same inside a transaction the caller began and commits itself.
//
// Thread-safety: a Guard is safe to use from many threads at once (it only reads its options and
// opens a transaction per call).
#ifndef IDEM_GUARD_H_
#define IDEM_GUARD_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/outcome.h"
#include "idem/record.h"
#include "idem/store.h"
#include "idem/transaction.h"

namespace idem {

// The caller's effect. It writes through `tx` (never commits or rolls back itself) and returns the
// response to store and replay; the guard classifies the response's status with the
// OutcomeClassifier. A non-OK status rolls everything back, records nothing, and is returned to
// the caller as is. An exception thrown by the effect rolls everything back and propagates.
using Effect = std::function<absl::StatusOr<StoredResponse>(Transaction& tx)>;

struct GuardOptions {
  // Decides completed / failed_final / transient from the response's status.
  OutcomeClassifier classifier;
  // Names the holder of a claim in the record. Default (empty): "HOST:PID:N", unique per guard.
  std::string owner;
  // How many times a transient store error (busy, serialization failure, deadlock, lost
  // connection, disk full: a transaction the store doomed, StoreTransaction::Doomed) is retried
  // inside Run and RunBatch, with jittered backoff, before it is returned. An effect's own
  // error is never retried, whatever its code. Default 0.
  int transient_retries = 0;
};

struct GuardResult {
  StoredResponse response;
  // kCompleted or kFailedFinal when the outcome is stored; kInProgress for a transient outcome,
  // which was returned but not stored (the effect's writes were rolled back).
  KeyState state = KeyState::kInProgress;
  // true: the stored outcome of an earlier arrival; the effect did not run.
  bool replayed = false;
};

// One call of a batch (see Guard::RunBatch).
struct GuardCall {
  Scope scope;
  std::string fingerprint;
  Effect effect;
};

class Guard {
 public:
  // REQUIRES: `store` outlives the guard.
  explicit Guard(Store& store, GuardOptions options = {});
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

  // Runs `effect` at most once for `scope`, unless an earlier run's outcome was transient.
  //  - First arrival: runs the effect; completed → effect + record committed; failed_final →
  //    effect rolled back to the savepoint, the error recorded and committed; transient →
  //    everything rolled back, nothing recorded, the response returned with state kInProgress.
  //  - A stored outcome with the same fingerprint: returned with replayed = true.
  //  - A concurrent caller of the same key waits for the first's commit and replays it (or runs
  //    the effect itself if the first rolled back).
  // Errors: FailedPrecondition when the key's stored fingerprint differs (nothing is returned of
  // the stored response); DataLoss when the stored fingerprint is not of idem::Fingerprint's form
  // while `fingerprint` is (a corrupt record, not a reused key); Aborted when a lease-mode holder
  // still holds the key; Unavailable when the store is busy or down; any error the effect returned.
  // On error nothing is recorded.
  absl::StatusOr<GuardResult> Run(const Scope& scope, std::string_view fingerprint,
                                  const Effect& effect);

  // Runs many calls in one transaction and one commit (group commit: one durable write instead
  // of one per call). Each call behaves as Run would, isolated from the others by savepoints: a
  // call whose effect fails or is transient undoes only its own claim and writes. Calls are run
  // in order; two calls of the same key in one batch: the second replays the first.
  // Returns one result per call, in order (each an error or a GuardResult as Run's).
  // An effect's own error (Unavailable included) is that call's result only.
  // Errors (the whole batch, nothing committed): the store's doom (StoreTransaction::Doomed:
  // Unavailable when the store is busy or down, a savepoint statement failed, or the commit
  // failed; Internal when an effect ended the transaction through the native handle); retried
  // like Run's per GuardOptions::transient_retries.
  absl::StatusOr<std::vector<absl::StatusOr<GuardResult>>> RunBatch(
      const std::vector<GuardCall>& calls);

 private:
  // One attempt; `*retryable` says whether the store failed transiently (see Run).
  absl::StatusOr<GuardResult> RunOnce(const Scope& scope, std::string_view fingerprint,
                                      const Effect& effect, bool* retryable);
  absl::StatusOr<std::vector<absl::StatusOr<GuardResult>>> RunBatchOnce(
      const std::vector<GuardCall>& calls, bool* retryable);
  // Runs one call of a batch inside `tx`; whatever the call's outcome, `tx` holds either all of
  // it or none of it, else `*undo_failed` is set and `tx` must be rolled back.
  absl::StatusOr<GuardResult> RunInTransaction(StoreTransaction& tx, const GuardCall& call,
                                               bool* undo_failed);

  Store& store_;
  GuardOptions options_;
};

// Runs `effect` at most once for `scope` inside `tx`, a transaction the caller began and ends
// itself: one borrowed from its own connection (idem/borrowed_transaction.h) or one of
// Store::Begin. The claim, the effect's writes and the outcome go into `tx` beside the caller's
// own writes, under a savepoint, and are kept only if the caller commits `tx`; RunOnceIn never
// commits or rolls back `tx`. Returns, like Guard::Run:
//  - completed (state kCompleted): the effect's writes and the record are in `tx`: commit it.
//  - failed_final (kFailedFinal): the effect's writes were rolled back to the guard's savepoint;
//    the error record is in `tx`: commit it, and the error is replayed from then on.
//  - transient (kInProgress, the response returned but not stored): the guard rolled its claim
//    and the effect's writes back to its savepoint, so `tx` holds nothing of the guard's and
//    committing it commits only the caller's own writes; the next arrival runs the effect.
//  - replayed = true: the stored outcome of an earlier, committed arrival; the effect did not
//    run and the guard wrote nothing (the caller's own writes are its own to keep or undo).
// Concurrency: on PostgreSQL, a second caller of the same key waits at its claim until the
// first's transaction ends, then replays its outcome (or runs the effect, if it rolled back), as
// Guard::Run does; on a borrowed connection the wait is bounded only by the session's
// lock_timeout. On SQLite, begin the caller's transaction with BEGIN IMMEDIATE: it takes
// SQLite's one write lock at once, so a second caller waits at its own BEGIN (for its busy
// timeout) and then replays; under a plain BEGIN the claim must upgrade a read lock to the
// write lock, which SQLite cannot wait for, and fails with Unavailable when another writer
// committed in between.
// A call nested in an effect, of the key the outer call holds, is Aborted without running its
// effect (on every store); the outer call goes on.
// Every savepoint statement of the call has reached the database before the effect runs and
// before RunOnceIn returns, so on a borrowed transaction the effect may write on the caller's raw
// connection and the caller's own savepoints are left as it made them.
// Errors: as Guard::Run's (FailedPrecondition for another fingerprint, DataLoss, Aborted,
// Unavailable, the effect's own error); NotFound when the database lacks idem's tables (a
// connection of the caller's to a database OpenStore never opened); Internal when the caller
// already ended a borrowed `tx`; Unavailable, `tx` doomed, when PostgreSQL aborted a borrowed
// `tx` after a statement the caller ran on it failed. Never retried (the transaction is the
// caller's). After an error the guard's claim and the effect's writes are rolled back to its
// savepoint, so `tx` holds only the caller's own writes, unless tx.Doomed() is not OK (the store
// failed, or the transaction was ended): then roll `tx` back. An exception thrown by the effect
// propagates and leaves the effect's writes in `tx`: roll it back.
// REQUIRES: no other call uses `tx` meanwhile.
absl::StatusOr<GuardResult> RunOnceIn(StoreTransaction& tx, const Scope& scope,
                                      std::string_view fingerprint, const Effect& effect,
                                      const GuardOptions& options = {});

}  // namespace idem

#endif  // IDEM_GUARD_H_
