// idem/retry/duration.h: the one way idem reads and writes durations ("250ms", "2s", "1m30s").
//
// Every flag and setting that takes a duration (idem call's --deadline, idem serve's --lease, ...)
// goes through ParseDuration, so a person sees the same syntax and the same errors everywhere.
//
// Thread-safety: free functions without state; safe from any thread.
#ifndef IDEM_RETRY_DURATION_H_
#define IDEM_RETRY_DURATION_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::retry {

// Parses a duration written as one or more <number><unit> parts, largest unit first:
// "250ms", "2s", "1.5s", "1m30s", "1h". Units: ms, s, m, h. "0" alone means zero.
// Fractions are allowed in every part and rounded down to whole milliseconds.
// Returns the duration, or InvalidArgument naming what is wrong (empty, negative, unknown unit,
// a number without unit, or more than 10^12 ms, about 31 years).
absl::StatusOr<Millis> ParseDuration(std::string_view text);

// Returns `d` written in the largest unit that divides it exactly: "250ms", "2s", "90s" stays
// "90s", "1m" for 60000 ms, "1h". Output parses back to the same value with ParseDuration.
std::string FormatDuration(Millis d);

}  // namespace idem::retry

#endif  // IDEM_RETRY_DURATION_H_
