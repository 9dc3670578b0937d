// How a lease write that changed nothing is explained when it may be the retry of a write whose
// acknowledgement was lost (Store::ApplyLeaseBatch's rules, idem/store.h): the record read after
// it decides, the same way on every store.
#ifndef IDEM_CORE_RETRIED_WRITE_H_
#define IDEM_CORE_RETRIED_WRITE_H_

#include <optional>

#include "absl/status/status.h"
#include "idem/record.h"
#include "idem/store.h"

namespace idem {

// true when `found`, the live record that blocked the claim `write`, is that claim's own record,
// written by an earlier attempt of the same claim: the claim has a nonce
// (LeaseWrite::claim_nonce) and `found` is in_progress with that nonce and fingerprint.
bool IsOwnClaim(const LeaseWrite& write, const KeyRecord& found);

// The result of a claim that found its own record `found` (IsOwnClaim): claimed, with the record
// and lease as the store holds them; taken_over when that attempt took a lapsed lease over (its
// created time is older than its last write).
LeaseWriteResult OwnClaimResult(const KeyRecord& found, int64_t now_ms);

// The status of a release of `write.fence` that deleted nothing, from the live record read after
// it (nullopt: absent or expired): OK when there is none (a retry of a release that went
// through, or a key that lapsed and was swept: either way it is not held), else Aborted naming
// the holder.
absl::Status UnchangedRelease(const LeaseWrite& write, const std::optional<KeyRecord>& found);

}  // namespace idem

#endif  // IDEM_CORE_RETRIED_WRITE_H_
