// Starts the real idem binary (IDEM_BINARY) in the background, for tests that signal it or run
// two at once, and waits for it.
#ifndef IDEM_TESTS_RELAY_RELAY_PROCESS_H_
#define IDEM_TESTS_RELAY_RELAY_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

namespace idem::testing {

class Background final {
 public:
  explicit Background(const std::vector<std::string>& args);  // idem ARGS..., stderr to a file
  ~Background();                                              // SIGKILLs it if still running
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  pid_t pid() const { return pid_; }
  void Signal(int signal);
  // Waits for the process to exit; returns its exit code (-1 when killed by a signal).
  int Wait();
  std::string err() const;  // what it wrote to stderr so far

 private:
  pid_t pid_ = -1;
  std::string err_path_;
};

}  // namespace idem::testing

#endif  // IDEM_TESTS_RELAY_RELAY_PROCESS_H_
