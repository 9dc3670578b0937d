// Checks of an idem::KeyQuery (idem/store.h) that every store applies before listing.
//
// Thread-safety: pure functions.
#ifndef IDEM_CORE_KEY_QUERY_H_
#define IDEM_CORE_KEY_QUERY_H_

#include "absl/status/status.h"
#include "idem/store.h"

namespace idem {

inline constexpr int64_t kMaxListLimit = 10000;

// Returns InvalidArgument for a limit outside 1..kMaxListLimit or a negative age; OK otherwise.
absl::Status ValidateKeyQuery(const KeyQuery& query);

}  // namespace idem

#endif  // IDEM_CORE_KEY_QUERY_H_
