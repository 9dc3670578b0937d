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

// Applies `write` with its single call's meaning, or, when `batch`, with ApplyLeaseBatch's (a
// claim takes a lapsed lease of the same request over; finishing again is OK). Errors go into
// the result's status: InvalidArgument, Aborted, FailedPrecondition, Unavailable.
LeaseWriteResult ApplyLeaseWrite(Keyspace& keyspace, const LeaseRules& rules,
                                 const LeaseWrite& write, bool batch);

// ApplyLeaseBatch's first step: every claim that is the batch's first write of its key goes out
// as a Create, all of them at once and in order (one round trip; fences follow the batch's order
// within a bucket). Fills results[i] and sets settled[i] for each claim it decided (won, or an
// error); a key that exists is left for ApplyLeaseWrite, like every other write.
void CreateFirstClaims(Keyspace& keyspace, const LeaseRules& rules,
                       std::span<const LeaseWrite> writes, std::vector<LeaseWriteResult>& results,
                       std::vector<bool>& settled);

// Store::TakeOver. Errors: as there.
absl::StatusOr<KeyRecord> TakeOverKey(Keyspace& keyspace, const LeaseRules& rules,
                                      const ClaimRequest& request, int64_t expected_fence);

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_LEASE_OPS_H_
