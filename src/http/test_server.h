// ScriptedServer: a real HTTP/1.1 server on 127.0.0.1 (a free port), plain or TLS, for the tests
// of src/http. Every request is answered with the raw bytes a test-supplied function returns, so
// a test can send what well-behaved servers never do (1xx before the answer, garbage, a close
// on a kept-alive connection). It records requests and counts connections.
//
// Thread-safety: the server runs on its own thread; every public method may be called from the
// test thread while it runs.
#ifndef IDEM_HTTP_TEST_SERVER_H_
#define IDEM_HTTP_TEST_SERVER_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#pragma GCC diagnostic pop
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace idem::http::testing {

struct SeenRequest {
  std::string method;
  std::string target;
  std::string idempotency_key;
  std::string body;
  int connection = 0;  // 1 for the first connection accepted, and so on
  int index = 0;       // 1 for the first request on its connection
  std::vector<std::pair<std::string, std::string>> headers;  // every header, in order
};

struct ScriptedReply {
  std::string bytes;   // written as is
  bool close = false;  // close the connection after writing
  bool hang = false;   // write nothing more and keep the connection open
};

// A test certificate authority and a server certificate it signed (made with the openssl
// command), in a temporary directory: ca_file is what a client trusts (--cacert), cert_file and
// key_file what the server presents.
struct TestCertificate {
  std::string dir, ca_file, cert_file, key_file;
};
// Returns a fresh CA and a server certificate for `san` (e.g. "DNS:localhost,IP:127.0.0.1"),
// valid one day.
TestCertificate MakeTestCertificate(const std::string& san);

// Returns an ordinary 200 answer with `body` (keep-alive).
std::string Ok(const std::string& body);

class ScriptedServer final {
 public:
  using Script = std::function<ScriptedReply(const SeenRequest&)>;
  // Starts listening and serving at once; TLS when `cert` is given.
  explicit ScriptedServer(Script script, const TestCertificate* cert = nullptr);
  ~ScriptedServer();
  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  unsigned short port() const { return port_; }
  std::string Url(const std::string& path, const std::string& host = "127.0.0.1") const;
  std::vector<SeenRequest> requests() const;
  int connections() const;     // accepted so far
  int max_concurrent() const;  // most connections open at once
  // Waits until `n` connections have been closed by either side and seen closed by the server.
  void WaitClosed(int n) const;

 private:
  struct Conn;
  void Accept();
  void Begin(std::shared_ptr<Conn> c);
  void ReadNext(std::shared_ptr<Conn> c);
  void Closed();

  // Declared before ioc_: connections still queued in it when it is destroyed use them.
  Script script_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<SeenRequest> requests_;
  int accepted_ = 0, open_ = 0, max_open_ = 0, closed_ = 0;
  std::vector<std::shared_ptr<Conn>> held_;  // connections told to hang
  std::unique_ptr<boost::asio::ssl::context> tls_;
  boost::asio::io_context ioc_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread thread_;
};

}  // namespace idem::http::testing

#endif  // IDEM_HTTP_TEST_SERVER_H_
