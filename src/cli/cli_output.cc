#include "cli/cli_output.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace idem::cli {

bool OutputWritten(std::string_view program, std::FILE* out) {
  errno = 0;
  if (std::fflush(out) == 0 && std::ferror(out) == 0) return true;
  const int error = errno != 0 ? errno : EIO;
  std::fprintf(stderr, "%s: cannot write the output: %s\n", std::string(program).c_str(),
               std::strerror(error));
  return false;
}

}  // namespace idem::cli
