#include "gateway/forward.h"

#include <fmt/format.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

#include "gateway/guard_outcome.h"
#include "gateway/problem_json.h"

namespace idem::gateway {
namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr uint32_t kHeaderLimit = 64 * 1024;

bool HopByHop(http::field f) {
  switch (f) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::transfer_encoding:
    case http::field::te:
    case http::field::trailer:
    case http::field::upgrade:
    case http::field::proxy_authenticate:
    case http::field::proxy_authorization:
    case http::field::proxy_connection:
    case http::field::content_length:
      return true;
    default:
      return false;
  }
}

// What an error of the upstream exchange means for the client.
absl::Status UpstreamError(beast::error_code ec, const UpstreamTarget& target, Millis timeout) {
  if (ec == beast::error::timeout)
    return absl::DeadlineExceededError(fmt::format(
        "the upstream {} did not answer within {} ms; the request was not recorded, retry it "
        "with the same idempotency key",
        target.authority, timeout.count()));
  if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message)
    return absl::DataLossError(
        fmt::format("the upstream {} sent an invalid HTTP answer ({}); nothing was recorded",
                    target.authority, ec.message()));
  return absl::UnavailableError(fmt::format(
      "the upstream {} closed the connection or failed before a whole answer ({}); nothing was "
      "recorded, retry with the same idempotency key",
      target.authority, ec.message()));
}

std::string Prefixed(const UpstreamTarget& target, std::string_view request_target) {
  return target.path_prefix + std::string(request_target);
}

// Reads into a buffer_body parser and writes through a serializer until the message is through.
template <bool isRequest>
asio::awaitable<beast::error_code> RelayBody(beast::tcp_stream& out, beast::tcp_stream& in,
                                             beast::flat_buffer& in_buffer,
                                             http::parser<isRequest, http::buffer_body>& p,
                                             Millis idle_timeout) {
  http::serializer<isRequest, http::buffer_body> sr{p.get()};
  std::array<char, 16384> buf;
  do {
    if (!p.is_done()) {
      p.get().body().data = buf.data();
      p.get().body().size = buf.size();
      in.expires_after(idle_timeout);
      auto [ec, n] = co_await http::async_read(in, in_buffer, p, kTuple);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) co_return ec;
      p.get().body().size = buf.size() - p.get().body().size;
      p.get().body().data = buf.data();
      p.get().body().more = !p.is_done();
    } else {
      p.get().body().data = nullptr;
      p.get().body().size = 0;
      p.get().body().more = false;
    }
    out.expires_after(idle_timeout);
    auto [ec, n] = co_await http::async_write(out, sr, kTuple);
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return ec;
  } while (!p.is_done() || !sr.is_done());
  co_return beast::error_code{};
}

}  // namespace

std::vector<Header> EndToEndHeaders(const http::fields& fields) {
  std::vector<Header> out;
  for (const auto& f : fields) {
    if (HopByHop(f.name())) continue;
    out.push_back({std::string(f.name_string()), std::string(f.value())});
  }
  return out;
}

asio::awaitable<absl::StatusOr<StoredResponse>> ForwardBuffered(
    UpstreamPool& pool, http::request<http::string_body> request, Millis timeout) {
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<UpstreamPool::Lease> lease = co_await pool.Acquire(timeout);
  if (!lease.ok()) co_return lease.status();
  beast::tcp_stream& stream = *lease->stream;
  request.target(Prefixed(pool.target(), request.target()));
  request.set(http::field::host, pool.target().authority);
  request.keep_alive(true);
  request.erase(http::field::transfer_encoding);
  request.prepare_payload();
  stream.expires_at(start + timeout);
  auto [wec, wn] = co_await http::async_write(stream, request, kTuple);
  if (wec) co_return UpstreamError(wec, pool.target(), timeout);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.header_limit(kHeaderLimit);
  parser.body_limit(kMaxStoredResponseBody);
  if (request.method() == http::verb::head) parser.skip(true);
  auto [rec, rn] = co_await http::async_read(stream, buffer, parser, kTuple);
  if (rec) co_return UpstreamError(rec, pool.target(), timeout);
  http::response<http::string_body> response = parser.release();
  StoredResponse out{.status = static_cast<int>(response.result_int()),
                     .headers = EndToEndHeaders(response.base()),
                     .body = std::move(response.body())};
  if (response.keep_alive() && buffer.size() == 0) pool.Release(std::move(lease->stream));
  co_return out;
}

asio::awaitable<bool> WriteResponse(beast::tcp_stream& client, const StoredResponse& response,
                                    bool keep_alive, unsigned http_version, Millis timeout) {
  http::response<http::string_body> res{static_cast<http::status>(response.status), http_version};
  for (const Header& h : response.headers) res.insert(h.name, h.value);
  res.body() = response.body;
  res.keep_alive(keep_alive);
  res.prepare_payload();
  client.expires_after(timeout);
  auto [ec, n] = co_await http::async_write(client, res, kTuple);
  co_return !ec && keep_alive;
}

asio::awaitable<bool> RelayPassThrough(beast::tcp_stream& client, beast::flat_buffer& client_buffer,
                                       http::request_parser<http::buffer_body>& parser,
                                       UpstreamPool& pool, Millis idle_timeout) {
  const unsigned version = parser.get().version();
  const bool head = parser.get().method() == http::verb::head;
  const bool client_keep_alive = parser.get().keep_alive();
  absl::StatusOr<UpstreamPool::Lease> lease = co_await pool.Acquire(idle_timeout);
  if (!lease.ok()) {
    const StoredResponse problem = ProblemResponse(ProblemFor(lease.status(), Origin::kUpstream));
    co_await WriteResponse(client, problem, false, version, idle_timeout);
    co_return false;
  }
  beast::tcp_stream& upstream = *lease->stream;
  parser.get().target(Prefixed(pool.target(), parser.get().target()));
  parser.get().set(http::field::host, pool.target().authority);
  parser.get().keep_alive(true);
  beast::error_code ec = co_await RelayBody(upstream, client, client_buffer, parser, idle_timeout);
  if (ec) co_return false;  // the client's body did not arrive whole: nothing to answer
  beast::flat_buffer upstream_buffer;
  http::response_parser<http::buffer_body> response;
  response.header_limit(kHeaderLimit);
  response.body_limit(boost::none);
  if (head) response.skip(true);
  upstream.expires_after(idle_timeout);
  auto [hec, hn] = co_await http::async_read_header(upstream, upstream_buffer, response, kTuple);
  if (hec) {
    const StoredResponse problem = ProblemResponse(
        ProblemFor(UpstreamError(hec, pool.target(), idle_timeout), Origin::kUpstream));
    co_await WriteResponse(client, problem, false, version, idle_timeout);
    co_return false;
  }
  const bool upstream_keep_alive = response.get().keep_alive();
  response.get().keep_alive(client_keep_alive && upstream_keep_alive);
  ec = co_await RelayBody(client, upstream, upstream_buffer, response, idle_timeout);
  if (ec) co_return false;
  if (upstream_keep_alive && upstream_buffer.size() == 0) pool.Release(std::move(lease->stream));
  co_return client_keep_alive&& upstream_keep_alive;
}

}  // namespace idem::gateway
