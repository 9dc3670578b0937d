// idem/lease_guard.h: run-once for effects outside the database (docs/design.md §2, "around an
// external effect"), such as an upstream HTTP call that no local transaction can cover.
//
// The claim commits on its own with a lease; while the effect runs, Heartbeat() extends the
// lease; the outcome is written with the claim's fencing token, so a holder whose lease was
// taken over can no longer overwrite the new holder's outcome. A holder that dies leaves a key
// whose lease lapses; the next arrival takes it over and runs the effect again.
//
// Thread-safety: a LeaseGuard is safe to use from many threads; a LeasedKey belongs to one
// holder (its Heartbeat may be called from another thread than Finish, never at the same time).
//
// Lost acknowledgements. A write whose outcome is unknown (a connection lost during COMMIT, a
// timeout after JetStream applied it) returns Unavailable. Nothing is guessed from it: call the
// same method again and the store resolves it by reading the record (Store::ApplyLeaseBatch):
// still this holder's claim, the write carries on from what the store holds; the record already
// holding this outcome, it is done; someone else's record, Aborted. Per call:
//  - Acquire sends a claim that came back Unavailable once more itself, with the same nonce (a
//    random 128-bit LeaseWrite::claim_nonce drawn for each acquisition), so a claim that went
//    through is found as this acquisition's own and never as another's; if that fails too, Unavailable: a claim that did go through stays in_progress
//    until its lease lapses, and then the next Acquire of the same request takes it over.
//  - Heartbeat again: the new lease end while the claim is this holder's; Aborted once it is not.
//  - Finish again with the same response: its result once the outcome is recorded (also when the
//    first attempt was the one that recorded it); Aborted when another holder has the key.
//  - Release again: OK once the key is not held with this fence (released, or lapsed and gone).
//  - FinishRetrying does the retrying of Finish for you: with backoff and jitter, heartbeating
//    the key meanwhile, until the outcome is recorded, the key is lost, a deadline or a stop.
//
// Times (lease_until_ms, now_ms) are the store's clock: the database's on a PostgreSQL store
// without an injected clock. Compare them with each other, not with the local clock.
#ifndef IDEM_LEASE_GUARD_H_
#define IDEM_LEASE_GUARD_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/guard.h"
#include "idem/outcome.h"
#include "idem/record.h"
#include "idem/retry/backoff.h"
#include "idem/retry/retrier.h"
#include "idem/store.h"

namespace idem {

struct LeaseOptions {
  // How long a claim holds without a heartbeat. Default 30 s.
  Millis lease = 30s;
  // Decides completed / failed_final / transient from the effect's response status.
  OutcomeClassifier classifier;
  // Names the holder in the record, for people. Default (empty): "HOST:PID:N". Each acquisition
  // records it as "OWNER/M", M counting the guard's acquisitions. Two guards may share it (two
  // processes given one name, PID 1 of two containers on one host): it never decides whose a
  // record is; a claim whose acknowledgement was lost is recognised by its nonce alone.
  std::string owner;
};

// How LeasedKey::FinishRetrying retries recording an outcome.
struct FinishRetryOptions {
  // The waits between attempts. Default: full jitter, from 100 ms up to a cap of 5 s.
  retry::BackoffOptions backoff{
      .jitter = retry::Jitter::kFull, .base = Millis(100), .cap = Millis(5'000)};
  // Seeds the jitter. Default 0: a seed drawn from the key's fence and the time.
  uint64_t seed = 0;
  // The longest the call keeps trying, from its start. Default 0: no bound.
  Millis deadline{0};
  // A stop request ends the call between attempts and cuts a wait short. Default: none.
  std::stop_token stop;
  // Heartbeats the key when this long passed without a lease extension, so that the claim is
  // kept while the store is being retried. Default 0: a third of LeaseOptions::lease.
  Millis heartbeat_every{0};
  // Time and waits; tests inject a ManualClock and a retry::ManualSleeper (a sleeper's waits are
  // not cut short by `stop`). Default (null): SystemClock() and a wait that `stop` interrupts.
  const Clock* clock = nullptr;
  retry::Sleeper* sleeper = nullptr;
};

class LeaseGuard;

// A key this caller holds: run the effect, then Finish (or Release on a failure to reach the
// effect at all). Made only by LeaseGuard::Acquire; move-only. It borrows the guard's store and
// options: the guard must outlive it. Destroying a LeasedKey does nothing; an unfinished key's
// lease simply lapses.
class LeasedKey {
 public:
  LeasedKey(LeasedKey&&) noexcept = default;
  LeasedKey& operator=(LeasedKey&&) noexcept = default;
  LeasedKey(const LeasedKey&) = delete;
  LeasedKey& operator=(const LeasedKey&) = delete;

  const Scope& scope() const { return scope_; }
  int64_t fence() const { return fence_; }
  // true when this claim took over an expired lease of an earlier holder.
  bool taken_over() const { return taken_over_; }
  // When the lease ends, by the store's clock, as of the claim or the last heartbeat.
  int64_t lease_until_ms() const { return lease_until_ms_; }

  // Extends the lease to the store's now + lease and returns its new end (store's clock; cancel
  // the effect before it). Errors: Aborted when the key was taken over or finished; Unavailable.
  absl::StatusOr<int64_t> Heartbeat();

  // Records the effect's response by its class: completed or failed_final is stored and will be
  // replayed; a transient response releases the key (nothing stored) and is returned with state
  // kInProgress. Idempotent: after an Unavailable (the write's outcome unknown) call it again
  // with the same response; once it succeeded, a repeat returns the same result.
  // Errors: Aborted when the key was taken over (nothing written); FailedPrecondition for a
  // repeat with another response; Unavailable.
  absl::StatusOr<GuardResult> Finish(const StoredResponse& response);

  // Finish, retried while it returns Unavailable (the store down, or the write's outcome
  // unknown), with the backoff of `options`; between attempts the key is heartbeaten every
  // options.heartbeat_every (a heartbeat's failure is left for the next Finish to explain). The
  // response is kept in the meantime and recorded exactly once: a retry whose first attempt
  // went through returns its result. Returns Finish's result once it is recorded.
  // Errors: Aborted when the key is another holder's (taken over after a lapse: nothing of this
  // outcome is stored, another holder's will be); FailedPrecondition as Finish;
  // DeadlineExceeded when options.deadline passed, and Cancelled when options.stop was requested,
  // with the outcome still unrecorded (the message says why the last attempt failed; calling
  // again carries on); InvalidArgument for invalid backoff options.
  absl::StatusOr<GuardResult> FinishRetrying(const StoredResponse& response,
                                             const FinishRetryOptions& options = {});

  // Gives the key up without an outcome: it becomes absent. Idempotent: a repeat after OK is OK,
  // and so is a retry after Unavailable that finds the key no longer held with this fence.
  // Errors: Aborted when taken over before the first attempt; Unavailable.
  absl::Status Release();

 private:
  friend class LeaseGuard;
  LeasedKey(Store& store, Scope scope, const LeaseOptions& options, const LeaseWriteResult& claim);

  // Applies one write of this key through Store::ApplyLeaseBatch.
  absl::StatusOr<LeaseWriteResult> Write(LeaseWrite write);

  Store* store_;
  Scope scope_;
  int64_t fence_;
  const LeaseOptions* options_;
  bool taken_over_;
  int64_t lease_until_ms_;
  std::optional<StoredResponse> finished_with_;  // set once Finish succeeded
  std::optional<GuardResult> finished_;
  bool released_ = false;           // a Release succeeded
  bool release_attempted_ = false;  // a Release may have committed (it returned Unavailable)
};

// Another holder's claim on the key is live: its effect is running now.
struct InFlight {
  int64_t lease_until_ms = 0;  // when that holder's lease ends, by the store's clock
  int64_t now_ms = 0;          // the store's clock when the arrival was looked at
  // How long until the lease ends (never negative): a Retry-After, or a bound for a wait.
  Millis remaining() const { return Millis(lease_until_ms > now_ms ? lease_until_ms - now_ms : 0); }
};

// What an arrival gets; exactly one member is set: the key to run the effect with, the stored
// outcome to replay, or the news that the key is in flight (ask again after in_flight's lease).
struct LeaseAcquisition {
  std::optional<LeasedKey> key;       // run the effect
  std::optional<GuardResult> replay;  // return this, replayed = true
  std::optional<InFlight> in_flight;  // someone else runs it now
};

class LeaseGuard {
 public:
  // REQUIRES: `store` outlives the guard.
  explicit LeaseGuard(Store& store, LeaseOptions options = {});
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;

  // Claims the key, or takes over a lapsed lease of the same request, in one write
  // (Store::ApplyLeaseBatch); else finds the stored outcome, or that the key is in flight. A
  // claim answered Unavailable is sent once more at once, and found if it went through (above).
  // `note` (default: none) is kept in the claim's in_progress record (KeyRecord::response) until
  // the outcome replaces it: what a recoverer's resolver needs to find out what became of the
  // effect should this holder die (idem/lease_recoverer.h), e.g. the request and where it went.
  // It is stored as given, not encrypted.
  // Errors: FailedPrecondition when the key's stored fingerprint differs; InvalidArgument for a
  // malformed scope; Unavailable when the store is busy or down (twice in a row).
  absl::StatusOr<LeaseAcquisition> Acquire(const Scope& scope, std::string_view fingerprint,
                                           StoredResponse note = {});

  const LeaseOptions& options() const { return options_; }

 private:
  // One claim through Store::ApplyLeaseBatch, its result's status folded in.
  absl::StatusOr<LeaseWriteResult> Claim(const LeaseWrite& claim);

  Store& store_;
  LeaseOptions options_;
  std::atomic<uint64_t> acquisitions_{0};
};

}  // namespace idem

#endif  // IDEM_LEASE_GUARD_H_
