// The one check every store makes of a lease's length, with the one message it gives.
#ifndef IDEM_CORE_LEASE_LENGTH_H_
#define IDEM_CORE_LEASE_LENGTH_H_

#include <chrono>

#include "absl/status/status.h"

namespace idem {

// InvalidArgument, saying what to give instead, unless `lease` is positive.
absl::Status CheckLeaseLength(std::chrono::milliseconds lease);

}  // namespace idem

#endif  // IDEM_CORE_LEASE_LENGTH_H_
