// Where and how `idem call` writes its final answer: stdout or -o FILE, the body or (--json) a
// summary for scripts, nothing for a 4xx/5xx under --fail. Output that cannot be written is a
// failure (exit 6), never a silent success.
//
// Thread-safety: a CallOutput belongs to one thread.
#ifndef IDEM_CLI_CALL_OUTPUT_H_
#define IDEM_CLI_CALL_OUTPUT_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/retry/retry_policy.h"

namespace idem::cli {

struct CallOutputOptions {
  std::string path;      // -o FILE: the body goes there; empty: stdout
  bool include = false;  // -i: the status line and headers before the body
  bool fail = false;     // --fail: no body for a final 4xx/5xx
  bool json = false;     // --json: stdout gets one JSON summary instead of the body
};

// The final answer, as written with -i (`head`: status line and headers, CRLF-terminated).
struct CallAnswer {
  int status = 0;
  std::string head;
  std::string_view body;
};

// What the --json summary reports.
struct CallSummary {
  int exit_code = 0;
  int attempts = 0;
  retry::StopReason stop = retry::StopReason::kSucceeded;
  int64_t elapsed_ms = 0;
  std::optional<std::string> key;
  const CallAnswer* answer = nullptr;  // null when no answer came
};

// Returns a stable token for `reason` ("succeeded", "attempts_exhausted", ...): a contract of
// --json (docs/idem-call.md); never rename.
std::string_view StopReasonToken(retry::StopReason reason);

class CallOutput final {
 public:
  // Opens -o FILE for writing (created or truncated) before anything is sent.
  // Errors: InvalidArgument naming the file and why it cannot be written.
  static absl::StatusOr<std::unique_ptr<CallOutput>> Open(const CallOutputOptions& options);
  ~CallOutput();
  CallOutput(const CallOutput&) = delete;
  CallOutput& operator=(const CallOutput&) = delete;

  // Writes the body (with -i its head, under --fail not for status >= 400) to -o FILE or stdout,
  // and with --json the summary to stdout. Returns false, after "idem call: cannot write ..." on
  // stderr, when any of it could not be written.
  bool Write(const CallSummary& summary);

 private:
  CallOutput(CallOutputOptions options, std::FILE* file)
      : options_(std::move(options)), file_(file) {}

  CallOutputOptions options_;
  std::FILE* file_;  // -o FILE, or null for stdout
};

}  // namespace idem::cli

#endif  // IDEM_CLI_CALL_OUTPUT_H_
