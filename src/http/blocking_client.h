// BlockingClient: idem's HTTP client for one thread that may wait (a command-line program such
// as `idem call`). It runs AsyncSend on its own io_context and keeps one small connection pool
// per origin, so retries to one server reuse a kept-alive connection.
//
// Thread-safety: one BlockingClient per thread; Send must not be called concurrently.
#ifndef IDEM_HTTP_BLOCKING_CLIENT_H_
#define IDEM_HTTP_BLOCKING_CLIENT_H_

#include <map>
#include <memory>
#include <string>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#pragma GCC diagnostic pop

#include "absl/status/statusor.h"
#include "http/connection_pool.h"
#include "http/exchange.h"
#include "http/tls.h"
#include "http/url.h"

namespace idem::http {

struct BlockingClientOptions {
  TlsOptions tls;  // for https:// URLs
  // Per origin; `tls` is made from `tls` above when the first https URL is used.
  PoolOptions pool{.max_open = 1, .max_idle = 1};
};

class BlockingClient final {
 public:
  // Returns a client, or InvalidArgument when options.tls.ca_file cannot be read or holds no
  // certificate. The system certificate store is loaded at the first https:// Send.
  static absl::StatusOr<std::unique_ptr<BlockingClient>> Create(BlockingClientOptions options);
  BlockingClient(const BlockingClient&) = delete;
  BlockingClient& operator=(const BlockingClient&) = delete;
  ~BlockingClient();

  // Sends `request` to `url`'s origin (the request's target is the caller's: url.target usually)
  // and waits for the result; see AsyncSend. Never throws.
  SendResult Send(const Url& url, Request request, const SendOptions& options);

 private:
  explicit BlockingClient(BlockingClientOptions options) : options_(std::move(options)) {}
  absl::StatusOr<std::shared_ptr<ConnectionPool>> PoolFor(const Origin& origin);

  BlockingClientOptions options_;
  boost::asio::io_context ioc_;
  std::map<std::string, std::shared_ptr<ConnectionPool>> pools_;
};

}  // namespace idem::http

#endif  // IDEM_HTTP_BLOCKING_CLIENT_H_
