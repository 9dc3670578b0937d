// The one message every store gives when a write carries a fencing token that no longer holds,
// and when a takeover comes from another request.
#ifndef IDEM_CORE_STALE_FENCE_H_
#define IDEM_CORE_STALE_FENCE_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/status/status.h"
#include "idem/record.h"

namespace idem {

// Returns Aborted for `operation` attempted with `fence` on `scope`, naming what holds the key
// now (`live`, the record's current live state, or nullopt when it is absent or expired).
absl::Status StaleFenceError(std::string_view operation, const Scope& scope, int64_t fence,
                             const std::optional<KeyRecord>& live);

// Returns FailedPrecondition for a takeover of `scope` by a request whose fingerprint differs
// from the record's: a key names one request, and only that request may take its claim over.
absl::Status TakeOverMismatchError(const Scope& scope);

}  // namespace idem

#endif  // IDEM_CORE_STALE_FENCE_H_
