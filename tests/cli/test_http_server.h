// A small HTTP/1.1 server on 127.0.0.1 (a free port) for the end-to-end tests of `idem call`.
// It answers by path and records every request it receives:
//   /ok                 200 "ok"
//   /flaky?fail=N       503 for the first N requests to /flaky, then 200 "ok"
//   /always503          503 "down" every time
//   /never              503 with `Idem-Retry: never`
//   /retry-after        503 with `Retry-After: 1` the first time, then 200 "ok"
//   /bad-request        400 "bad"
//   /early-hints-503    103 Early Hints, then 503 "down"
//   /continue-500       100 Continue, then 500 "broken"
//   /slow               sends headers and part of a body, then never finishes
// Thread-safety: requests() may be called from the test thread while the server runs.
#ifndef IDEM_TESTS_CLI_TEST_HTTP_SERVER_H_
#define IDEM_TESTS_CLI_TEST_HTTP_SERVER_H_

// GCC 12 at -O2 reports false "potential null pointer dereference" warnings inside Asio,
// which -Werror would turn into a failed release build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#pragma GCC diagnostic pop
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace idem::testing {

struct RecordedRequest {
  std::string method;
  std::string target;
  std::string idempotency_key;  // empty when absent
  bool has_key = false;
  std::string deadline_ms;  // Idem-Deadline-Ms, empty when absent
};

class TestHttpServer final {
 public:
  TestHttpServer();  // starts listening and serving at once
  ~TestHttpServer();
  TestHttpServer(const TestHttpServer&) = delete;
  TestHttpServer& operator=(const TestHttpServer&) = delete;

  unsigned short port() const { return port_; }
  std::string Url(const std::string& path) const;
  std::vector<RecordedRequest> requests() const;

 private:
  void Accept();
  void Serve(std::shared_ptr<boost::asio::ip::tcp::socket> socket);
  std::string Answer(const std::string& path, const std::string& query);

  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  mutable std::mutex mu_;
  std::vector<RecordedRequest> requests_;
  int flaky_seen_ = 0;
  int retry_after_seen_ = 0;
  std::vector<std::shared_ptr<boost::asio::ip::tcp::socket>> held_;  // /slow connections
  std::thread thread_;
};

// Returns a loopback port on which nothing listens (bound, then released).
unsigned short UnusedPort();

}  // namespace idem::testing

#endif  // IDEM_TESTS_CLI_TEST_HTTP_SERVER_H_
