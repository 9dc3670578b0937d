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
  pid_t pid() const { return pid_; }
  // Waits for the exit; returns the exit code, 128+signal when killed, -1 on timeout.
  int Wait(std::chrono::milliseconds bound);

 private:
  pid_t pid_ = -1;
  int status_ = -1;
  bool reaped_ = false;
};

// A loopback TCP port nothing listens on right now, drawn outside the kernel's ephemeral port
// range so that no outgoing connection takes it before the test binds it. Never the same port
// twice in one process, nor one another running test process holds (both until they exit).
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

// A raw TCP connection to 127.0.0.1:port for clients that misbehave on purpose (slow headers,
// stalled or truncated bodies). Closed when destroyed.
class RawConnection {
 public:
  explicit RawConnection(int port);
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  ~RawConnection();

  bool connected() const { return fd_ >= 0; }
  // Writes all of `bytes`; false when the peer closed or reset the connection.
  bool Write(const std::string& bytes);
  // Closes the sending half: the peer reads end of stream.
  void ShutdownWrite();
  // Reads until the peer closes the connection or `bound` passes; returns what arrived. Sets
  // closed() when the peer closed (or reset) it.
  std::string ReadUntilClosed(std::chrono::milliseconds bound);
  // Reads until what arrived contains `text`, the peer closes the connection or `bound` passes;
  // returns what arrived (bytes after `text` included, when they came with it).
  std::string ReadUntil(const std::string& text, std::chrono::milliseconds bound);
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// Runs `argv` to completion (bounded by `bound`) and returns its exit code (-1 on timeout) and
// its stdout and stderr together.
struct RunResult {
  int exit_code = -1;
  std::string output;
};
RunResult RunToExit(const std::vector<std::string>& argv, const std::string& scratch_dir,
                    std::chrono::milliseconds bound = std::chrono::seconds(30));

// The value of an unlabelled or labelled Prometheus sample `name` (e.g.
// `idem_requests_total{decision="executed"}`) in `metrics`, -1 when absent.
double MetricValue(const std::string& metrics, const std::string& name);

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);

}  // namespace idem::e2e

#endif  // IDEM_TESTS_GATEWAY_E2E_SUPPORT_H_
