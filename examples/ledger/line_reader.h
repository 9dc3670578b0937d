// Reads a file of transfers line by line, with a cap on the length of a line and read errors
// reported as such (never taken for the end of the file).
//
// Thread-safety: a LineReader belongs to one thread.
#ifndef IDEM_EXAMPLES_LEDGER_LINE_READER_H_
#define IDEM_EXAMPLES_LEDGER_LINE_READER_H_

#include <cstddef>
#include <cstdio>
#include <string>

namespace idem::ledger {

// The longest line accepted, in bytes (without the newline). A transfer is far shorter: a key of
// at most 255 bytes and two account names of at most 128.
inline constexpr size_t kMaxLineBytes = 64 * 1024;

enum class LineRead {
  kLine,     // `line` holds the next line, without its '\n'
  kTooLong,  // the line was longer than the cap; it was skipped to its end, `line` is empty
  kEnd,      // the end of the input
  kError,    // reading failed; error() says why
};

class LineReader final {
 public:
  // REQUIRES: `file` stays open while the reader is used. Not owned.
  explicit LineReader(std::FILE* file, size_t max_line_bytes = kMaxLineBytes)
      : file_(file), max_line_bytes_(max_line_bytes) {}
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  LineRead Next(std::string& line);
  // The errno of the failed read (after kError).
  int error() const { return error_; }

 private:
  std::FILE* file_;
  size_t max_line_bytes_;
  int error_ = 0;
};

}  // namespace idem::ledger

#endif  // IDEM_EXAMPLES_LEDGER_LINE_READER_H_
