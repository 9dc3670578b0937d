// idem/retry/retry_after.h: reading a server's Retry-After (RFC 9110 section 10.2.3).
//
// A server answering 503 or 429 may say when to come back, either as delta-seconds ("120") or as
// an HTTP-date ("Sun, 06 Nov 1994 08:49:37 GMT"; the obsolete RFC 850 and asctime forms are
// accepted too, as RFC 9110 asks of recipients).
//
// Thread-safety: free functions without state; safe from any thread.
#ifndef IDEM_RETRY_RETRY_AFTER_H_
#define IDEM_RETRY_RETRY_AFTER_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::retry {

// Returns the time the HTTP-date `text` names, in milliseconds since the Unix epoch (UTC), or
// InvalidArgument when it is none of IMF-fixdate, RFC 850 or asctime.
absl::StatusOr<int64_t> ParseHttpDate(std::string_view text);

// Returns how long to wait according to the Retry-After value `text`, read at `now_millis`.
// A date in the past gives zero. Surrounding spaces are ignored.
// Returns InvalidArgument when `text` is neither delta-seconds nor an HTTP-date.
absl::StatusOr<Millis> ParseRetryAfter(std::string_view text, int64_t now_millis);

}  // namespace idem::retry

#endif  // IDEM_RETRY_RETRY_AFTER_H_
