// Runs the real idem-ledger binary as a child process (posix_spawn), for the ledger's end-to-end
// and crash tests. The binary's path comes from the IDEM_LEDGER_BIN compile definition.
//
// Thread-safety: a LedgerProcess belongs to one thread.
#ifndef IDEM_TESTS_LEDGER_LEDGER_PROCESS_H_
#define IDEM_TESTS_LEDGER_LEDGER_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace idem::ledger_test {

struct Finished {
  int exit_code = -1;  // the exit status, or -1 when killed by a signal
  int signal = 0;      // the signal that killed it, or 0
  std::string out;     // everything written to stdout
  std::string err;     // everything written to stderr
};

// How a child is started. Defaults: stdin from /dev/null, stdout to a pipe the test reads, the
// test's own environment.
struct SpawnOptions {
  std::string stdin_path = "/dev/null";
  // When set, stdout goes to this file (e.g. /dev/full) instead of the pipe; `out` stays empty.
  std::string stdout_path;
  // NAME=VALUE pairs added to (or replacing those of) the test's environment.
  std::vector<std::string> env;
};

// Runs `idem-ledger args...` to completion and returns what it did.
// Aborts the test binary if it cannot spawn.
Finished RunLedger(const std::vector<std::string>& args, const SpawnOptions& options = {});

// A running idem-ledger whose stdout is read line by line; stderr is collected.
class LedgerProcess final {
 public:
  explicit LedgerProcess(const std::vector<std::string>& args, const SpawnOptions& options = {});
  LedgerProcess(const LedgerProcess&) = delete;
  LedgerProcess& operator=(const LedgerProcess&) = delete;
  ~LedgerProcess();  // kills and reaps a child still running

  bool started() const { return pid_ > 0; }
  // Returns the next line of stdout (without '\n'), or nullopt at end of output.
  std::optional<std::string> ReadLine();
  // Sends SIGKILL (if still running) and reaps the child.
  Finished Kill();
  // Reads the rest of the output and reaps the child.
  Finished Wait();

 private:
  bool FillBuffer();
  Finished Reap();

  pid_t pid_ = -1;
  int out_fd_ = -1;
  int err_fd_ = -1;
  std::string buffer_;  // stdout read but not yet returned by ReadLine
  std::string out_;     // every stdout line already returned
  std::string err_;
};

}  // namespace idem::ledger_test

#endif  // IDEM_TESTS_LEDGER_LEDGER_PROCESS_H_
