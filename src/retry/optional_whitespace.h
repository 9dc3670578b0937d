// Internal: header values in the retry toolkit's parsers lose their optional whitespace (RFC 9110
// section 5.6.3: spaces and tabs) at both ends the same way.
#ifndef IDEM_RETRY_OPTIONAL_WHITESPACE_H_
#define IDEM_RETRY_OPTIONAL_WHITESPACE_H_

#include <string_view>

namespace idem::retry {

inline std::string_view TrimOptionalWhitespace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace idem::retry

#endif  // IDEM_RETRY_OPTIONAL_WHITESPACE_H_
