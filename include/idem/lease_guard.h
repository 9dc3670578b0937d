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
// Times (lease_until_ms, now_ms) are the store's clock: the database's on a PostgreSQL store
// without an injected clock. Compare them with each other, not with the local clock.
#ifndef IDEM_LEASE_GUARD_H_
#define IDEM_LEASE_GUARD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/guard.h"
#include "idem/outcome.h"
#include "idem/record.h"
#include "idem/store.h"

namespace idem {

struct LeaseOptions {
  // How long a claim holds without a heartbeat. Default 30 s.
  Millis lease = 30s;
  // Decides completed / failed_final / transient from the effect's response status.
  OutcomeClassifier classifier;
  // Names the holder in the record. Default (empty): "HOST:PID:N", unique per guard.
  std::string owner;
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
  // (Store::ApplyLeaseBatch); else finds the stored outcome, or that the key is in flight.
  // Errors: FailedPrecondition when the key's stored fingerprint differs; InvalidArgument for a
  // malformed scope; Unavailable when the store is busy or down.
  absl::StatusOr<LeaseAcquisition> Acquire(const Scope& scope, std::string_view fingerprint);

  const LeaseOptions& options() const { return options_; }

 private:
  Store& store_;
  LeaseOptions options_;
};

}  // namespace idem

#endif  // IDEM_LEASE_GUARD_H_
