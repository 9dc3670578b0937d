// What an arrival gets when its key already has a live record: shared by both guard modes.
#ifndef IDEM_GUARD_REPLAY_H_
#define IDEM_GUARD_REPLAY_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/guard.h"
#include "idem/record.h"

namespace idem::guard_internal {

// Returns the stored outcome of `record` to replay.
// Errors: DataLoss when `fingerprint` has idem::Fingerprint's form (64 lowercase hex digits) and
// the stored one does not: the store is corrupt, the key was not reused; FailedPrecondition when
// the record's fingerprint differs from `fingerprint`;
// Aborted when the record is still in_progress (held by a live lease).
absl::StatusOr<GuardResult> ReplayOf(const KeyRecord& record, std::string_view fingerprint);

// A fresh owner name for a guard whose options named none.
std::string DefaultOwner();

}  // namespace idem::guard_internal

#endif  // IDEM_GUARD_REPLAY_H_
