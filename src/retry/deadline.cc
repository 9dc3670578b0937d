#include "idem/retry/deadline.h"

#include <fmt/format.h>

#include <algorithm>

#include "absl/status/status.h"
#include "common/optional_whitespace.h"

namespace idem::retry {

std::string FormatDeadlineHeader(Millis remaining) {
  return fmt::format("{}", std::max<int64_t>(remaining.count(), 0));
}

absl::StatusOr<Millis> ParseDeadlineHeader(std::string_view value) {
  value = TrimOptionalWhitespace(value);
  if (value.empty() || value.size() > 12 ||
      value.find_first_not_of("0123456789") != std::string_view::npos) {
    return absl::InvalidArgumentError(
        fmt::format("{} must be a whole number of milliseconds (at most 12 digits), got '{}'",
                    kDeadlineHeader, value));
  }
  int64_t ms = 0;
  for (char c : value) ms = ms * 10 + (c - '0');
  return Millis(ms);
}

Millis ShrinkTimeout(Millis own_timeout, std::optional<Millis> remaining) {
  if (!remaining) return own_timeout;
  return std::min(own_timeout, std::max(*remaining, Millis(0)));
}

absl::StatusOr<Millis> TimeoutForRequest(Millis own_timeout,
                                         std::optional<std::string_view> header_value) {
  if (!header_value) return own_timeout;
  absl::StatusOr<Millis> remaining = ParseDeadlineHeader(*header_value);
  if (!remaining.ok()) return remaining.status();
  return ShrinkTimeout(own_timeout, *remaining);
}

}  // namespace idem::retry
