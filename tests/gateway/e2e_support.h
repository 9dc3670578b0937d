// Support for the gateway's end-to-end tests: child processes (the real idem binary and the real
// examples/charges upstream), free loopback ports, a blocking HTTP client, and polling for a
// condition with a deadline (never sleeping as synchronisation).
#ifndef IDEM_TESTS_GATEWAY_E2E_SUPPORT_H_
#define IDEM_TESTS_GATEWAY_E2E_SUPPORT_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace idem::e2e {

// A child process; killed with SIGKILL when destroyed while running.
class Child {
 public:
  // Starts `argv` with stdout and stderr appended to `log_path`.
  Child(const std::vector<std::string>& argv, const std::string& log_path);
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child();

  bool Running();
  void Signal(int signal);
  // Waits for the exit; returns the exit code, 128+signal when killed, -1 on timeout.
  int Wait(std::chrono::milliseconds bound);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool reaped_ = false;
};

// A loopback TCP port nothing listens on right now.
int FreePort();

struct Response {
  int status = 0;  // 0: no answer (connection refused, reset or timed out)
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string error;
  // The value of header `name` (any case), "" when absent; count how many there are.
  std::string Header(const std::string& name) const;
  int HeaderCount(const std::string& name) const;
};

// Sends one request on a new connection to 127.0.0.1:port and reads the answer (20 s bound).
// `headers` are sent in order, duplicates included.
Response Send(int port, const std::string& method, const std::string& target,
              const std::vector<std::pair<std::string, std::string>>& headers = {},
              const std::string& body = "");

// Calls `condition` until it returns true or `bound` passes; returns its last result.
bool Eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds bound = std::chrono::seconds(20));

// A JSON number field of `json` (a flat object), -1 when absent.
long JsonNumber(const std::string& json, const std::string& field);

}  // namespace idem::e2e

#endif  // IDEM_TESTS_GATEWAY_E2E_SUPPORT_H_
