#include "gateway/upstream_pool.h"

#include <fmt/format.h>
#include <sys/socket.h>

#include <cerrno>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/url/parse.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {
namespace {

// false when the peer closed an idle connection (or sent something unasked): it cannot carry a
// request. Peeks without blocking.
bool StillOpen(tcp::socket& socket) {
  char byte;
  const ssize_t n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

}  // namespace

absl::StatusOr<UpstreamTarget> ParseUpstreamUrl(std::string_view url) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(fmt::format(
        "--upstream '{}': {}; write http://HOST:PORT with an optional path prefix", url, why));
  };
  boost::system::result<boost::urls::url_view> parsed = boost::urls::parse_absolute_uri(url);
  if (!parsed) return bad("not an absolute URL");
  if (parsed->scheme() == "https") return bad("https upstreams are not supported yet");
  if (parsed->scheme() != "http") return bad("the scheme must be http");
  if (parsed->host().empty()) return bad("no host");
  if (parsed->has_userinfo()) return bad("user info is not allowed");
  if (parsed->has_query() || parsed->has_fragment()) return bad("no query or fragment allowed");
  UpstreamTarget target;
  target.host = parsed->host_address();
  if (parsed->host_type() == boost::urls::host_type::ipv6) {
    target.host = target.host.substr(1, target.host.size() - 2);
  }
  target.port = parsed->has_port() ? std::string(parsed->port()) : "80";
  target.authority = std::string(parsed->encoded_host_and_port());
  target.path_prefix = std::string(parsed->encoded_path());
  while (!target.path_prefix.empty() && target.path_prefix.back() == '/')
    target.path_prefix.pop_back();
  return target;
}

UpstreamPool::UpstreamPool(asio::io_context& ioc, UpstreamTarget target,
                           tcp::resolver::results_type endpoints, size_t max_idle)
    : ioc_(ioc),
      target_(std::move(target)),
      endpoints_(std::move(endpoints)),
      max_idle_(max_idle) {}

asio::awaitable<absl::StatusOr<UpstreamPool::Lease>> UpstreamPool::Acquire(Millis timeout) {
  while (!idle_.empty()) {
    Lease lease{.stream = std::move(idle_.back()), .reused = true};
    idle_.pop_back();
    if (StillOpen(lease.stream->socket())) co_return lease;
  }
  co_return co_await Connect(timeout);
}

asio::awaitable<absl::StatusOr<UpstreamPool::Lease>> UpstreamPool::Connect(Millis timeout) {
  auto stream = std::make_unique<beast::tcp_stream>(ioc_);
  stream->expires_after(timeout);
  auto [ec, endpoint] =
      co_await stream->async_connect(endpoints_, asio::as_tuple(asio::use_awaitable));
  if (ec == beast::error::timeout)
    co_return absl::DeadlineExceededError(
        fmt::format("connecting to the upstream {} took longer than {} ms", target_.authority,
                    timeout.count()));
  if (ec)
    co_return absl::UnavailableError(
        fmt::format("the upstream {} cannot be reached: {}", target_.authority, ec.message()));
  stream->socket().set_option(tcp::no_delay(true));
  co_return Lease{.stream = std::move(stream), .reused = false};
}

void UpstreamPool::Release(std::unique_ptr<beast::tcp_stream> stream) {
  if (idle_.size() >= max_idle_) return;
  stream->expires_never();
  idle_.push_back(std::move(stream));
}

}  // namespace idem::gateway
