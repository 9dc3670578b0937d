#include "idem/retry/duration.h"

#include <fmt/format.h>

#include <cstdint>
#include <optional>

#include "absl/status/status.h"

namespace idem::retry {
namespace {

constexpr int64_t kMaxMillis = 1'000'000'000'000;  // ~31 years: beyond any sane timeout.

absl::Status BadDuration(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(
      fmt::format("'{}' is not a duration: {}; write a number and a unit, such as 250ms, 2s, "
                  "1m30s or 1h",
                  text, why));
}

// Milliseconds per unit, or nullopt for an unknown unit.
std::optional<int64_t> UnitMillis(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  return std::nullopt;
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

}  // namespace

absl::StatusOr<Millis> ParseDuration(std::string_view text) {
  if (text.empty()) return BadDuration(text, "it is empty");
  if (text.front() == '-') return BadDuration(text, "durations cannot be negative");
  if (text == "0") return Millis(0);
  // Fixed-point arithmetic in microseconds keeps "1.5s" exact without floating point.
  int64_t total_us = 0;
  size_t i = 0;
  while (i < text.size()) {
    int64_t whole = 0;
    int64_t frac_us_num = 0;  // fractional digits, scaled below
    int64_t frac_scale = 1;
    size_t digits = 0;
    for (; i < text.size() && IsDigit(text[i]); ++i, ++digits) {
      whole = whole * 10 + (text[i] - '0');
      if (whole > kMaxMillis) return BadDuration(text, "it is too large");
    }
    if (i < text.size() && text[i] == '.') {
      for (++i; i < text.size() && IsDigit(text[i]); ++i, ++digits) {
        if (frac_scale < 1'000'000) {
          frac_us_num = frac_us_num * 10 + (text[i] - '0');
          frac_scale *= 10;
        }
      }
    }
    if (digits == 0) return BadDuration(text, "expected a number");
    size_t unit_start = i;
    while (i < text.size() && IsAlpha(text[i])) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty()) return BadDuration(text, "a number has no unit");
    if ((unit.front() == 'e' || unit.front() == 'E') && unit.size() == 1 && i < text.size() &&
        (IsDigit(text[i]) || text[i] == '+' || text[i] == '-'))
      return BadDuration(text, "exponents (1e3) are not accepted");
    std::optional<int64_t> per = UnitMillis(unit);
    if (!per) return BadDuration(text, fmt::format("unknown unit '{}'", unit));
    if (whole > kMaxMillis / *per) return BadDuration(text, "it is too large");
    total_us += whole * *per * 1000 + frac_us_num * *per * 1000 / frac_scale;
    if (total_us > kMaxMillis * 1000) return BadDuration(text, "it is too large");
  }
  return Millis(total_us / 1000);
}

std::string FormatDuration(Millis d) {
  const int64_t ms = d.count();
  if (ms == 0) return "0";
  if (ms % 3'600'000 == 0) return fmt::format("{}h", ms / 3'600'000);
  if (ms % 60'000 == 0) return fmt::format("{}m", ms / 60'000);
  if (ms % 1000 == 0) return fmt::format("{}s", ms / 1000);
  return fmt::format("{}ms", ms);
}

}  // namespace idem::retry
