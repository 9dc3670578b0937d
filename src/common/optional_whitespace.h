// Internal: the header values idem parses (Idempotency-Key, Retry-After, the deadline header) lose
// their optional whitespace (RFC 9110 section 5.6.3: spaces and tabs) at both ends the same way.
#ifndef IDEM_COMMON_OPTIONAL_WHITESPACE_H_
#define IDEM_COMMON_OPTIONAL_WHITESPACE_H_

#include <string_view>

namespace idem {

inline std::string_view TrimOptionalWhitespace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace idem

#endif  // IDEM_COMMON_OPTIONAL_WHITESPACE_H_
