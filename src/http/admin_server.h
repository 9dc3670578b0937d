// The admin listener of idem's long-running commands (idem serve --admin, idem relay --admin): a
// small HTTP/1.1 server, never mixed into any proxied path, that answers GET and HEAD through a
// handler (/healthz, /readyz, /metrics in Prometheus text format) and 405 to other methods.
// Requests are small (a body over 8 KiB closes the connection); an idle connection is closed after
// 5 s; keep-alive is honoured.
//
// Thread-safety: AcceptAdmin runs on its acceptor's executor; AdminServer's methods may be
// called from any thread. The handler runs on the server's io thread.
#ifndef IDEM_HTTP_ADMIN_SERVER_H_
#define IDEM_HTTP_ADMIN_SERVER_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#pragma GCC diagnostic pop
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "absl/status/statusor.h"

namespace idem::http {

struct AdminReply {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};
// The Content-Type of Prometheus's text exposition format.
inline constexpr char kPrometheusTextType[] = "text/plain; version=0.0.4; charset=utf-8";

// Answers one GET or HEAD of `path` (the target without its query; it stays valid until the
// returned awaitable completes). Must not throw.
using AdminHandler = std::function<boost::asio::awaitable<AdminReply>(std::string_view path)>;

// Accepts admin connections on `acceptor` until it is closed; each connection is served on the
// acceptor's executor. `handler` is shared by every connection and lives as long as the last.
boost::asio::awaitable<void> AcceptAdmin(boost::asio::ip::tcp::acceptor& acceptor,
                                         std::shared_ptr<const AdminHandler> handler);

// An admin listener with its own io thread, for commands that have none (idem relay).
class AdminServer final {
 public:
  // Listens on `address` (HOST:PORT, numeric; port 0 picks one) and serves until destroyed.
  // Errors: InvalidArgument for a malformed address, Unavailable when it cannot listen (both
  // name `flag`).
  static absl::StatusOr<std::unique_ptr<AdminServer>> Start(std::string_view address,
                                                            std::string_view flag,
                                                            AdminHandler handler);
  ~AdminServer();  // stops listening, closes connections, joins the thread
  AdminServer(const AdminServer&) = delete;
  AdminServer& operator=(const AdminServer&) = delete;

  // "host:port" it listens on (the real port when 0 was asked for).
  const std::string& address() const { return address_; }

 private:
  AdminServer() = default;

  boost::asio::io_context ioc_{1};
  std::unique_ptr<boost::asio::ip::tcp::acceptor> acceptor_;
  std::string address_;
  std::thread thread_;
};

}  // namespace idem::http

#endif  // IDEM_HTTP_ADMIN_SERVER_H_
