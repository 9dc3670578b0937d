#include "cli/cli_output.h"

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
  if (to_ms < from_ms) return "-" + retry::FormatDuration(Millis(from_ms - to_ms));
  return retry::FormatDuration(Millis(to_ms - from_ms));
}

bool IsText(std::string_view bytes) {
  return core::FindInvalidUtf8(bytes) == std::string_view::npos;
}

}  // namespace idem::cli
