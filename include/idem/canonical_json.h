// idem/canonical_json.h: the JSON Canonicalization Scheme (RFC 8785, "JCS"), so that two JSON
// texts that mean the same thing give the same bytes (and so the same request fingerprint).
//
// Output: no whitespace; object members sorted by the UTF-16 code units of their names; strings
// with only \" \\ \b \f \n \r \t and \u00xx (lowercase hex, other control characters) escaped,
// everything else literal UTF-8; numbers as IEEE-754 doubles written the way ECMAScript's
// Number.prototype.toString writes them (so 1.50 → 1.5, 1E30 → 1e+30, -0 → 0, and integers
// beyond 2^53 lose precision exactly as JavaScript does). With exact_numbers, a number that its
// double does not carry exactly is written exactly instead (see CanonicalJsonOptions).
//
// Thread-safety: pure functions; call from any thread.
#ifndef IDEM_CANONICAL_JSON_H_
#define IDEM_CANONICAL_JSON_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace idem {

struct CanonicalJsonOptions {
  // JSON pointers (RFC 6901, e.g. "/meta/request_id", "/items/0", with ~0 for '~' and ~1 for
  // '/') whose values are left out of the output, as if the member or array element were absent.
  // Every pointer is resolved against the input document, so their order does not matter; a
  // pointer that names nothing is ignored. Default: none.
  std::vector<std::string> excluded_pointers;
  // Deepest nesting of arrays and objects accepted. Default 64.
  int max_depth = 64;
  // When true, two numbers are written alike only when their decimal values are equal: a number
  // whose RFC 8785 form (the shortest digits of its nearest double) has its exact value is written
  // in that form (1.50, 15e-1 → 1.5; 1E30 → 1e+30; -0 → 0); any other is written with its exact
  // significant digits and a capital E, which RFC 8785 never writes (1234567890123456789 →
  // 1.234567890123456789E18, 0.10000000000000001 → 1.0000000000000001E-1, 1e-400 → 1E-400),
  // where RFC 8785 would round it to its double (1234567890123456800, 0.1, 0). Numbers beyond the
  // largest double are still refused. The output is valid JSON but no longer RFC 8785 for such
  // numbers. Default false (RFC 8785 exactly). idem's request fingerprint sets it.
  bool exact_numbers = false;
};

// Returns the RFC 8785 canonical form of `json`. Returns InvalidArgument when `json` is not one
// valid JSON text in UTF-8 (including trailing data, comments and trailing commas), when an object
// has two members with the same name, when a number does not fit a double (e.g. 1e400), when the
// nesting is deeper than options.max_depth, or when an excluded pointer is malformed (does not
// start with '/', has '~' not followed by 0 or 1, or is "", which would exclude everything).
// Returns ResourceExhausted if memory runs out while parsing.
absl::StatusOr<std::string> CanonicalizeJson(std::string_view json,
                                             const CanonicalJsonOptions& options = {});

// Returns the ECMAScript Number.prototype.toString form of `value` (RFC 8785 §3.2.2.3).
// REQUIRES: `value` is finite.
std::string FormatJsonNumber(double value);

}  // namespace idem

#endif  // IDEM_CANONICAL_JSON_H_
