// How `idem check --count-url URL [--count-pointer /ptr]` reads an API's own count of effects: a
// GET of the URL whose answer is a JSON number at the pointer, or (no pointer) a plain integer
// or a JSON number. Effects of a scenario are the count after it minus the count before it.
//
// Thread-safety: pure functions, and ReadCount uses the Prober's rules.
#ifndef IDEM_CHECK_EFFECT_COUNTER_H_
#define IDEM_CHECK_EFFECT_COUNTER_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "check/check_plan.h"
#include "check/prober.h"

namespace idem::check {

// Returns the count in `body`: with `pointer` (RFC 6901, e.g. "/charges"), the integer at that
// place of a JSON document; without, the whole body as an integer (spaces and line ends around
// it ignored) or a JSON number. Returns InvalidArgument saying what was found instead (not
// JSON, nothing at the pointer, a value that is not a whole number of at least 0).
absl::StatusOr<int64_t> ParseCount(std::string_view body, std::string_view pointer);

// GETs `source.url` and returns its count, or: Unavailable (no answer, or a status other than
// 2xx), InvalidArgument (see ParseCount). Messages name the URL.
absl::StatusOr<int64_t> ReadCount(Prober& prober, const CountSource& source);

}  // namespace idem::check

#endif  // IDEM_CHECK_EFFECT_COUNTER_H_
