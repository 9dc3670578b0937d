#include "core/json_number.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>

#include "idem/canonical_json.h"

namespace idem::core {
namespace {

constexpr std::size_t kMaxExponentDigits = 15;

// Drops the zeros `digits` ends with.
void TrimTrailingZeros(std::string& digits) {
  const std::size_t last = digits.find_last_not_of('0');
  digits.erase(last == std::string::npos ? 0 : last + 1);
}

// Whether `text` is an integer of at most 15 digits without leading zeros ("-42", "7"): its own
// RFC 8785 form, as every double below 2^53 is written with its exact digits.
bool IsShortInteger(std::string_view text) {
  if (text.starts_with('-')) text.remove_prefix(1);
  return !text.empty() && text.size() <= 15 && text.front() != '0' &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::optional<Decimal> DecimalOf(std::string_view text) {
  Decimal d;
  if (text.starts_with('-')) {
    d.negative = true;
    text.remove_prefix(1);
  }
  const std::size_t e = std::min(text.find_first_of("eE"), text.size());
  const std::string_view mantissa = text.substr(0, e);
  const std::size_t point = std::min(mantissa.find('.'), mantissa.size());
  d.digits.reserve(mantissa.size());
  d.digits.append(mantissa.substr(0, point));
  if (point < mantissa.size()) d.digits.append(mantissa.substr(point + 1));
  const std::size_t first = d.digits.find_first_not_of('0');
  if (first == std::string::npos) return Decimal{};  // zero, whatever its sign and exponent
  d.digits.erase(0, first);
  TrimTrailingZeros(d.digits);
  d.exponent = static_cast<long long>(point) - static_cast<long long>(first);
  if (e == text.size()) return d;
  std::string_view exponent = text.substr(e + 1);
  const bool negative = exponent.starts_with('-');
  if (negative || exponent.starts_with('+')) exponent.remove_prefix(1);
  exponent.remove_prefix(std::min(exponent.find_first_not_of('0'), exponent.size()));
  if (exponent.size() > kMaxExponentDigits) return std::nullopt;
  long long value = 0;
  for (char c : exponent) value = value * 10 + (c - '0');
  d.exponent += negative ? -value : value;
  return d;
}

Decimal ShortestDecimalOf(double value) {
  Decimal d;
  if (value == 0) return d;
  d.negative = value < 0;
  // "d.ddde±x": the shortest digits that read back as `value`, and the power of the first.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof buffer, std::fabs(value),
                                    std::chars_format::scientific);
  const std::string_view text(buffer, static_cast<std::size_t>(result.ptr - buffer));
  const std::size_t e = text.find('e');
  for (char c : text.substr(0, e)) {
    if (c != '.') d.digits.push_back(c);
  }
  TrimTrailingZeros(d.digits);
  long long power = 0;
  std::from_chars(text.data() + e + (text[e + 1] == '+' ? 2 : 1), text.data() + text.size(), power);
  d.exponent = power + 1;
  return d;
}

void AppendExactNumber(std::string_view text, double value, std::string& out) {
  if (IsShortInteger(text)) {
    out.append(text);
    return;
  }
  const std::optional<Decimal> exact = DecimalOf(text);
  if (!exact.has_value()) {
    out.append(text);
    return;
  }
  if (*exact == ShortestDecimalOf(value)) {
    out += FormatJsonNumber(value);
    return;
  }
  if (exact->negative) out.push_back('-');
  out.push_back(exact->digits.front());
  if (exact->digits.size() > 1) out.append(".").append(exact->digits, 1);
  fmt::format_to(std::back_inserter(out), "E{}", exact->exponent - 1);
}

}  // namespace idem::core
