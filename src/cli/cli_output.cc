#include "cli/cli_output.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/utf8.h"
#include "idem/retry/duration.h"

namespace idem::cli {

bool OutputWritten(std::string_view program, std::FILE* out) {
  errno = 0;
  if (std::fflush(out) == 0 && std::ferror(out) == 0) return true;
  const int error = errno != 0 ? errno : EIO;
  std::fprintf(stderr, "%s: cannot write the output: %s\n", std::string(program).c_str(),
               std::strerror(error));
  return false;
}

std::string Age(int64_t from_ms, int64_t to_ms) {
  if (to_ms < from_ms) return "-" + Age(to_ms, from_ms);
  const int64_t ms = to_ms - from_ms;
  if (ms < 1000) return fmt::format("{}ms", ms);
  // Two units at most, the smaller rounded down: an operator reads "1m24s", not "84632ms".
  const int64_t s = ms / 1000;
  const auto two = [](int64_t big, char big_unit, int64_t small, char small_unit) {
    return small == 0 ? fmt::format("{}{}", big, big_unit)
                      : fmt::format("{}{}{}{}", big, big_unit, small, small_unit);
  };
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return two(s / 60, 'm', s % 60, 's');
  return two(s / 3600, 'h', s % 3600 / 60, 'm');
}

bool IsText(std::string_view bytes) {
  return core::FindInvalidUtf8(bytes) == std::string_view::npos;
}

}  // namespace idem::cli
