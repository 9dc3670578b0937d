#include "gateway/admin.h"

#include <spdlog/spdlog.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {
namespace {

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr Millis kAdminTimeout = 5s;

// Why the gateway is not ready, or "" when it is.
asio::awaitable<std::string> NotReadyReason(GatewayContext& ctx, UpstreamPool& pool) {
  KeyOp op{.kind = KeyOp::Kind::kGet, .scope = {.tenant = "", .key = "idem-readiness-probe"}};
  KeyOpResult probe = co_await AwaitKeyOp(ctx, std::move(op));
  if (!probe.status.ok() && !absl::IsNotFound(probe.status))
    co_return "key store unavailable: " + std::string(probe.status.message());
  absl::Status upstream = co_await ProbeUpstream(pool, 1s);
  if (!upstream.ok()) co_return "upstream unavailable: " + std::string(upstream.message());
  co_return "";
}

asio::awaitable<http::response<http::string_body>> AdminAnswer(
    GatewayContext& ctx, UpstreamPool& pool, const http::request<http::string_body>& request) {
  http::response<http::string_body> res{http::status::ok, request.version()};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  const std::string_view path = request.target().substr(0, request.target().find('?'));
  if (request.method() != http::verb::get && request.method() != http::verb::head) {
    res.result(http::status::method_not_allowed);
    res.body() = "the admin endpoints answer GET only\n";
  } else if (path == "/healthz") {
    res.body() = "ok\n";
  } else if (path == "/readyz") {
    // No co_await inside a conditional expression: GCC 12 miscompiles it.
    std::string reason = "shutting down";
    if (!ctx.draining) reason = co_await NotReadyReason(ctx, pool);
    if (!reason.empty()) res.result(http::status::service_unavailable);
    res.body() = reason.empty() ? "ready\n" : reason + "\n";
  } else if (path == "/metrics") {
    res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
    res.body() = ctx.metrics.Render();
  } else {
    res.result(http::status::not_found);
    res.body() = "admin endpoints: /healthz /readyz /metrics\n";
  }
  co_return res;
}

asio::awaitable<void> ServeAdmin(GatewayContext& ctx, UpstreamPool& pool, tcp::socket socket) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(8192);
    stream.expires_after(kAdminTimeout);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
    if (ec) break;
    http::request<http::string_body> request = parser.release();
    http::response<http::string_body> res = co_await AdminAnswer(ctx, pool, request);
    res.keep_alive(request.keep_alive());
    res.prepare_payload();
    stream.expires_after(kAdminTimeout);
    auto [wec, wn] = co_await http::async_write(stream, res, kTuple);
    if (wec || !request.keep_alive()) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

}  // namespace

asio::awaitable<void> AcceptAdmin(GatewayContext& ctx, UpstreamPool& pool,
                                  tcp::acceptor& acceptor) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    asio::co_spawn(acceptor.get_executor(), ServeAdmin(ctx, pool, std::move(socket)),
                   [](std::exception_ptr e) {
                     if (!e) return;
                     try {
                       std::rethrow_exception(e);
                     } catch (const std::exception& ex) {
                       spdlog::error("admin connection failed: {}", ex.what());
                     }
                   });
  }
}

}  // namespace idem::gateway
