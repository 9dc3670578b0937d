// A hand-written upstream for the gateway's end-to-end tests of upstreams that misbehave or sit
// at the edges of HTTP/1.1 (interim 1xx answers, answers without a body, close-delimited bodies,
// idle keep-alive connections closed by the upstream): whatever bytes a test scripts, written on
// a real loopback socket, with counts of the requests and connections it saw.
#ifndef IDEM_TESTS_GATEWAY_SCRIPTED_UPSTREAM_H_
#define IDEM_TESTS_GATEWAY_SCRIPTED_UPSTREAM_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"

namespace idem::e2e {

class ScriptedUpstream {
 public:
  // The answer to one request: `bytes` written as they are; then the connection is closed when
  // `close` (which is how a close-delimited body ends).
  struct Reply {
    std::string bytes;
    bool close = false;
    // Written as soon as the head is read, without reading the body (then the connection is
    // closed): an upstream refusing a request before its body, as with 413.
    bool before_body = false;
  };
  // Called with a request's start line and headers once they are read (its body is read and
  // dropped, but see Reply::before_body).
  using Script = std::function<Reply(const std::string& head)>;

  // Listens on a free loopback port. A connection left idle for `idle_close` after an answer is
  // closed by the upstream (its own keep-alive timeout); zero keeps idle connections open.
  explicit ScriptedUpstream(Script script,
                            std::chrono::milliseconds idle_close = std::chrono::milliseconds(0));
  ScriptedUpstream(const ScriptedUpstream&) = delete;
  ScriptedUpstream& operator=(const ScriptedUpstream&) = delete;
  ~ScriptedUpstream();

  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int requests() const { return requests_.load(); }
  int connections() const { return connections_.load(); }
  int idle_closes() const { return idle_closes_.load(); }

  // The answer bytes of `status` with `headers` and a body framed by Content-Length.
  static std::string Answer(const std::string& status, const std::string& body,
                            const std::string& headers = "Content-Type: text/plain\r\n");

 private:
  void AcceptLoop();
  void Serve(int fd);

  Script script_;
  std::chrono::milliseconds idle_close_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> requests_{0}, connections_{0}, idle_closes_{0};
  std::mutex mu_;  // guards workers_
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

// One client connection to the gateway kept open across requests, to see whether an answer ends
// where it should and the connection is still usable after it. Reads past interim 1xx answers.
class KeepAliveClient {
 public:
  explicit KeepAliveClient(int port);
  ~KeepAliveClient();
  KeepAliveClient(const KeepAliveClient&) = delete;
  KeepAliveClient& operator=(const KeepAliveClient&) = delete;

  // Sends one request and reads its final answer within `bound` (status 0 and `error` set when
  // none arrived: the connection was closed or the answer did not end in time).
  Response Send(const std::string& method, const std::string& target,
                const std::vector<std::pair<std::string, std::string>>& headers = {},
                const std::string& body = "",
                std::chrono::milliseconds bound = std::chrono::seconds(5));

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace idem::e2e

#endif  // IDEM_TESTS_GATEWAY_SCRIPTED_UPSTREAM_H_
