#include "idem/retry/retry_after.h"

#include <fmt/format.h>

#include <array>
#include <optional>

#include "absl/status/status.h"
#include "common/optional_whitespace.h"

namespace idem::retry {
namespace {

constexpr std::array<std::string_view, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

// Days from 1970-01-01 to the given civil date (proleptic Gregorian).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

// A small cursor over the date text; every Take* returns false on a mismatch.
class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}
  bool Take(std::string_view lit) {
    if (s_.substr(0, lit.size()) != lit) return false;
    s_.remove_prefix(lit.size());
    return true;
  }
  bool TakeNumber(int min_digits, int max_digits, int64_t& out) {
    int n = 0;
    out = 0;
    while (n < max_digits && !s_.empty() && s_[0] >= '0' && s_[0] <= '9') {
      out = out * 10 + (s_[0] - '0');
      s_.remove_prefix(1);
      ++n;
    }
    return n >= min_digits;
  }
  bool TakeMonth(int64_t& month) {
    for (size_t i = 0; i < kMonths.size(); ++i) {
      if (Take(kMonths[i])) {
        month = static_cast<int64_t>(i) + 1;
        return true;
      }
    }
    return false;
  }
  bool SkipDayName() {  // "Sun", "Sunday": letters only, then the caller expects what follows
    size_t n = 0;
    while (n < s_.size() && ((s_[n] >= 'A' && s_[n] <= 'Z') || (s_[n] >= 'a' && s_[n] <= 'z'))) {
      ++n;
    }
    s_.remove_prefix(n);
    return n >= 3;
  }
  bool TakeTime(int64_t& h, int64_t& mi, int64_t& sec) {
    return TakeNumber(2, 2, h) && Take(":") && TakeNumber(2, 2, mi) && Take(":") &&
           TakeNumber(2, 2, sec);
  }
  bool done() const { return s_.empty(); }

 private:
  std::string_view s_;
};

struct Civil {
  int64_t year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
};

// "Sun, 06 Nov 1994 08:49:37 GMT" or "Sunday, 06-Nov-94 08:49:37 GMT" or "Sun Nov  6 08:49:37
// 1994".
std::optional<Civil> ParseForms(std::string_view text) {
  Civil c;
  {
    Cursor in(text);
    if (in.SkipDayName() && in.Take(", ") && in.TakeNumber(2, 2, c.day) && in.Take(" ") &&
        in.TakeMonth(c.month) && in.Take(" ") && in.TakeNumber(4, 4, c.year) && in.Take(" ") &&
        in.TakeTime(c.hour, c.minute, c.second) && in.Take(" GMT") && in.done()) {
      return c;
    }
  }
  {
    Cursor in(text);
    if (in.SkipDayName() && in.Take(", ") && in.TakeNumber(2, 2, c.day) && in.Take("-") &&
        in.TakeMonth(c.month) && in.Take("-") && in.TakeNumber(2, 2, c.year) && in.Take(" ") &&
        in.TakeTime(c.hour, c.minute, c.second) && in.Take(" GMT") && in.done()) {
      // RFC 9110: a two-digit year more than 50 years ahead is read as the past century.
      c.year += c.year < 70 ? 2000 : 1900;
      return c;
    }
  }
  {
    Cursor in(text);
    if (in.SkipDayName() && in.Take(" ") && in.TakeMonth(c.month) && in.Take(" ") &&
        (in.Take(" ") || true) && in.TakeNumber(1, 2, c.day) && in.Take(" ") &&
        in.TakeTime(c.hour, c.minute, c.second) && in.Take(" ") && in.TakeNumber(4, 4, c.year) &&
        in.done()) {
      return c;
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<int64_t> ParseHttpDate(std::string_view text) {
  std::optional<Civil> c = ParseForms(TrimOptionalWhitespace(text));
  if (!c || c->month < 1 || c->day < 1 || c->day > 31 || c->hour > 23 || c->minute > 59 ||
      c->second > 60) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not an HTTP-date; expected a form like 'Sun, 06 Nov 1994 08:49:37 GMT'", text));
  }
  const int64_t days = DaysFromCivil(c->year, c->month, c->day);
  return ((days * 24 + c->hour) * 60 + c->minute) * 60'000 + c->second * 1000;
}

absl::StatusOr<Millis> ParseRetryAfter(std::string_view text, int64_t now_millis) {
  std::string_view t = TrimOptionalWhitespace(text);
  if (!t.empty() && t.find_first_not_of("0123456789") == std::string_view::npos) {
    if (t.size() > 10) return Millis(int64_t{9'999'999'999} * 1000);  // absurd: caller bounds it
    int64_t seconds = 0;
    for (char ch : t) seconds = seconds * 10 + (ch - '0');
    return Millis(seconds * 1000);
  }
  absl::StatusOr<int64_t> at = ParseHttpDate(t);
  if (!at.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("Retry-After '{}' is neither delta-seconds nor an HTTP-date", text));
  }
  return Millis(*at > now_millis ? *at - now_millis : 0);
}

}  // namespace idem::retry
