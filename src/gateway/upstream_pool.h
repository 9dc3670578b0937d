// Internal: the upstream the gateway forwards to, and a bounded pool of idle keep-alive
// connections to it. One pool per io thread, so a pool is only ever touched by its own thread.
//
// Thread-safety: an UpstreamPool belongs to the io_context it was made for; use it only from
// that context's thread.
#ifndef IDEM_GATEWAY_UPSTREAM_POOL_H_
#define IDEM_GATEWAY_UPSTREAM_POOL_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gateway/asio_includes.h"
#include "idem/clock.h"

namespace idem::gateway {

struct UpstreamTarget {
  std::string host;         // without brackets
  std::string port;         // "80" when the URL names none
  std::string path_prefix;  // prepended to every forwarded target; "" for none
  std::string authority;    // host[:port] as written, for the Host header
};

// Returns the parts of an http:// upstream URL. Errors: InvalidArgument for anything else
// (https is not supported yet, user info, a query or fragment).
absl::StatusOr<UpstreamTarget> ParseUpstreamUrl(std::string_view url);

class UpstreamPool final {
 public:
  // REQUIRES: `endpoints` resolved from target; max_idle >= 0.
  UpstreamPool(asio::io_context& ioc, UpstreamTarget target, tcp::resolver::results_type endpoints,
               size_t max_idle);
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  const UpstreamTarget& target() const { return target_; }

  // A connection: an idle one when there is one (reused = true), else a new one connected
  // within `timeout`. Errors: Unavailable when the upstream refuses or cannot be reached,
  // DeadlineExceeded when connecting takes longer than `timeout`.
  struct Lease {
    std::unique_ptr<beast::tcp_stream> stream;
    bool reused = false;
  };
  asio::awaitable<absl::StatusOr<Lease>> Acquire(Millis timeout);
  // A new connection, never an idle one.
  asio::awaitable<absl::StatusOr<Lease>> Connect(Millis timeout);

  // Returns a connection whose last exchange left it reusable; beyond max_idle it is closed.
  void Release(std::unique_ptr<beast::tcp_stream> stream);

  // Closes every idle connection.
  void CloseIdle() { idle_.clear(); }

 private:
  asio::io_context& ioc_;
  UpstreamTarget target_;
  tcp::resolver::results_type endpoints_;
  size_t max_idle_;
  std::vector<std::unique_ptr<beast::tcp_stream>> idle_;
};

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_UPSTREAM_POOL_H_
