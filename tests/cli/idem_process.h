// Runs the real idem binary (the IDEM_BINARY compile definition of the test target) as a child
// process and captures what it prints, for the end-to-end tests of its subcommands.
//
// Thread-safety: each call is independent; calls may run concurrently.
#ifndef IDEM_TESTS_CLI_IDEM_PROCESS_H_
#define IDEM_TESTS_CLI_IDEM_PROCESS_H_

#include <chrono>
#include <string>
#include <vector>

namespace idem::testing {

struct CallRun {
  int exit_code = -1;  // -1 when the process did not exit normally
  std::string out;
  std::string err;
  std::chrono::milliseconds took{0};
};

// Where a child's stdin comes from and its stdout goes. Defaults: stdin empty, stdout captured.
struct IdemIo {
  std::string stdin_path = "/dev/null";
  std::string stdout_path;  // when set, stdout goes to this file (e.g. /dev/full); `out` is empty
};

// Returns the outcome of `idem ARGS...`, with stdin empty, stdout captured through a pipe and
// stderr through a temporary file. Failures to start are reported as test failures.
CallRun Idem(const std::vector<std::string>& args, const IdemIo& io = {});

}  // namespace idem::testing

#endif  // IDEM_TESTS_CLI_IDEM_PROCESS_H_
