// Internal: Store::ApplyLeaseBatch for a store without a native batch, each write as its own
// lease-mode call and commit. Same results as a native batch, without the shared commit; the
// reference the native batches are checked against.
#ifndef IDEM_CORE_LEASE_BATCH_ONE_BY_ONE_H_
#define IDEM_CORE_LEASE_BATCH_ONE_BY_ONE_H_

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"

namespace idem {

// `clock` is the store's own clock (LeaseWriteResult::now_ms).
absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatchOneByOne(
    Store& store, const Clock& clock, std::span<const LeaseWrite> writes);

}  // namespace idem

#endif  // IDEM_CORE_LEASE_BATCH_ONE_BY_ONE_H_
