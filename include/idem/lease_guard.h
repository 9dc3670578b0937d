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

// A key this caller holds: run the effect, then Finish (or Release on a failure to reach the
// effect at all). Destroying a LeasedKey does nothing; an unfinished key's lease simply lapses.
class LeasedKey {
 public:
  LeasedKey(Store& store, Scope scope, int64_t fence, const LeaseOptions& options, bool taken_over);

  const Scope& scope() const { return scope_; }
  int64_t fence() const { return fence_; }
  // true when this claim took over an expired lease of an earlier holder.
  bool taken_over() const { return taken_over_; }

  // Extends the lease to now + lease. Errors: Aborted when the key was taken over.
  absl::Status Heartbeat();

  // Records the effect's response by its class: completed or failed_final is stored and will be
  // replayed; a transient response releases the key (nothing stored) and is returned with state
  // kInProgress. Errors: Aborted when the key was taken over (nothing written).
  absl::StatusOr<GuardResult> Finish(const StoredResponse& response);

  // Gives the key up without an outcome: it becomes absent. Errors: Aborted when taken over.
  absl::Status Release();

 private:
  Store* store_;
  Scope scope_;
  int64_t fence_;
  const LeaseOptions* options_;
  bool taken_over_;
};

// What an arrival gets: the key to run the effect with, or the stored outcome to replay.
struct LeaseAcquisition {
  std::optional<LeasedKey> key;       // set: run the effect
  std::optional<GuardResult> replay;  // set: return this, replayed = true
};

class LeaseGuard {
 public:
  // REQUIRES: `store` outlives the guard.
  explicit LeaseGuard(Store& store, LeaseOptions options = {});
  LeaseGuard(const LeaseGuard&) = delete;
  LeaseGuard& operator=(const LeaseGuard&) = delete;

  // Claims the key, takes over an expired lease, or finds the stored outcome.
  // Errors: FailedPrecondition when the key's stored fingerprint differs; Aborted when another
  // holder's lease is still live (in flight: ask again after Retry-After); Unavailable when the
  // store is busy or down.
  absl::StatusOr<LeaseAcquisition> Acquire(const Scope& scope, std::string_view fingerprint);

  const LeaseOptions& options() const { return options_; }

 private:
  Store& store_;
  LeaseOptions options_;
};

}  // namespace idem

#endif  // IDEM_LEASE_GUARD_H_
