// Lease mode on a key-value bucket: each write reads the scope's last entry, checks the record's
// rules (state, fence, lease, expiry) and writes the new record conditionally on the revision it
// read, so a writer that lost the key between its read and its write fails instead of writing
// over the new owner. A claim of a key that has never been written is one Create (a write that
// expects no entry at all).
//
// Thread-safety: as Keyspace.
#ifndef IDEM_STORE_NATS_NATS_LEASE_OPS_H_
#define IDEM_STORE_NATS_NATS_LEASE_OPS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/nats/nats_keyspace.h"

namespace idem::nats {

struct LeaseRules {
  const Clock& clock;
  Millis retention;
};

// Conditional writes that lose to another writer re-read and decide again; each loss means
// someone else's write went through, so this bound is only hit under extreme contention.
constexpr int kMaxLeaseAttempts = 64;

// Applies `writes`, each with its single call's meaning, or, when `batch`, with ApplyLeaseBatch's
// (a claim takes a lapsed lease of the same request over; finishing again is OK). Writes on one
// scope go in order, each after the one before it ended; writes on different scopes go together:
// in rounds, where every write that needs its key's entry reads it, then every write decided
// from it is sent at once (Keyspace::WriteMany: one round trip), and a write whose key moved on
// reads and decides again in the next round. A claim's first attempt is a Create (no read); a
// fenced write's first attempt trusts the record remembered from its claim, if it shows the
// write's fence (its conditional write proves it current). No thread is started. Errors go into
// each result's status: InvalidArgument, Aborted, FailedPrecondition, Unavailable (an unknown
// outcome, resolved by the next write's read).
std::vector<LeaseWriteResult> ApplyLeaseWrites(Keyspace& keyspace, const LeaseRules& rules,
                                               std::span<const LeaseWrite> writes, bool batch);

// What one lease write does next, decided from its key's entry `current` at `now`.
struct LeaseStep {
  bool decided = false;      // `result` is the write's outcome: nothing to send
  LeaseWriteResult result;   // decided; else the result once `change` lands (a claim's record
                             // and lease are filled in from the record written)
  Keyspace::Change change;   // else the conditional write to send
};
LeaseStep DecideLeaseWrite(const LeaseRules& rules, const LeaseWrite& write, bool batch,
                           Current current, int64_t now);

// InvalidArgument for a bad scope, or a claim's or heartbeat's lease that is not positive.
absl::Status CheckLeaseWrite(const LeaseWrite& write);

// Whether a fenced write may start from `remembered` (live, and held with the write's fence).
bool Usable(const std::optional<Current>& remembered, const LeaseWrite& write, int64_t now);

// Unavailable: the key changed under kMaxLeaseAttempts consecutive writes.
absl::Status Contended(const Scope& scope);

// Store::TakeOver. Errors: as there.
absl::StatusOr<KeyRecord> TakeOverKey(Keyspace& keyspace, const LeaseRules& rules,
                                      const ClaimRequest& request, int64_t expected_fence);

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_LEASE_OPS_H_
