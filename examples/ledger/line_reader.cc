#include "line_reader.h"

#include <cerrno>

namespace idem::ledger {

LineRead LineReader::Next(std::string& line) {
  line.clear();
  bool too_long = false;
  bool any = false;
  for (;;) {
    errno = 0;
    const int c = getc_unlocked(file_);
    if (c == EOF) {
      if (std::ferror(file_) != 0) {
        error_ = errno != 0 ? errno : EIO;
        return LineRead::kError;
      }
      if (!any) return LineRead::kEnd;
      break;  // a last line without '\n'
    }
    any = true;
    if (c == '\n') break;
    if (line.size() < max_line_bytes_) {
      line.push_back(static_cast<char>(c));
    } else {
      too_long = true;
    }
  }
  if (!too_long) return LineRead::kLine;
  line.clear();
  return LineRead::kTooLong;
}

}  // namespace idem::ledger
