#include "gateway/admin.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#pragma GCC diagnostic pop

#include "http/admin_server.h"

namespace idem::gateway {
namespace {

using KeyOpAnswer =
    asio::experimental::concurrent_channel<void(boost::system::error_code, KeyOpResult)>;

// The store calls of the probe take at most this long each, and the whole probe at most
// kProbeBudget, so that /readyz answers within a second (a Kubernetes probe's default timeout)
// even while a store call waits out a lock (lock_timeout, 5s by default).
constexpr Millis kStoreProbeBound = 400ms;
constexpr Millis kProbeBudget = 900ms;

asio::awaitable<void> RunKeyOp(GatewayContext& ctx, KeyOp op, std::shared_ptr<KeyOpAnswer> answer) {
  KeyOpResult result = co_await AwaitKeyOp(ctx, std::move(op));
  answer->try_send(boost::system::error_code{}, std::move(result));
}

// Runs `op`, waiting for its answer at most kStoreProbeBound; nullopt when none came in time
// (the call still runs to its end on the key service, which cannot take it back, and its answer
// is dropped).
asio::awaitable<std::optional<KeyOpResult>> BoundedKeyOp(GatewayContext& ctx, KeyOp op) {
  using asio::experimental::awaitable_operators::operator||;
  auto executor = co_await asio::this_coro::executor;
  auto answer = std::make_shared<KeyOpAnswer>(executor, 1);
  asio::co_spawn(executor, RunKeyOp(ctx, std::move(op), answer), asio::detached);
  asio::steady_timer bound(executor, kStoreProbeBound);
  std::variant<KeyOpResult, std::monostate> first = co_await (
      answer->async_receive(asio::use_awaitable) || bound.async_wait(asio::use_awaitable));
  if (first.index() == 1) co_return std::nullopt;
  co_return std::get<0>(std::move(first));
}

// Why the gateway is not ready, or "" when it is.
asio::awaitable<std::string> NotReadyReason(GatewayContext& ctx, UpstreamPool& pool) {
  const auto start = std::chrono::steady_clock::now();
  const std::string late = fmt::format(
      "no answer within {}ms: the store is locked by another process, busy or unreachable",
      kStoreProbeBound.count());
  const Scope probe_key{.tenant = "", .key = "idem-readiness-probe"};
  KeyOp op{.kind = KeyOp::Kind::kGet, .scope = probe_key};
  std::optional<KeyOpResult> probe = co_await BoundedKeyOp(ctx, std::move(op));
  if (!probe.has_value()) co_return "key store unavailable for reads: " + late;
  if (!probe->status.ok() && !absl::IsNotFound(probe->status))
    co_return "key store unavailable: " + std::string(probe->status.message());
  // Reads may work while writes do not (a store locked by another process, a full disk, a
  // primary gone): after a failed write, a write decides (a heartbeat of a key nobody holds,
  // which changes nothing; any answer but Unavailable means writes go through again).
  if (ctx.store_unreachable.load(std::memory_order_relaxed)) {
    KeyOp beat{
        .kind = KeyOp::Kind::kHeartbeat, .scope = probe_key, .lease = ctx.config.lease, .fence = 1};
    std::optional<KeyOpResult> wrote = co_await BoundedKeyOp(ctx, std::move(beat));
    if (!wrote.has_value()) co_return "key store unavailable for writes: " + late;
    if (absl::IsUnavailable(wrote->status))
      co_return "key store unavailable for writes: " + std::string(wrote->status.message());
  }
  const Millis left =
      kProbeBudget - std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start);
  absl::Status upstream = co_await ProbeUpstream(pool, std::max<Millis>(left, 100ms));
  if (!upstream.ok()) co_return "upstream unavailable: " + std::string(upstream.message());
  co_return "";
}

asio::awaitable<idem::http::AdminReply> AdminAnswer(GatewayContext& ctx, UpstreamPool& pool,
                                                    std::string_view path) {
  idem::http::AdminReply reply;
  if (path == "/healthz") {
    reply.body = "ok\n";
  } else if (path == "/readyz") {
    // No co_await inside a conditional expression: GCC 12 miscompiles it.
    std::string reason = "shutting down";
    if (!ctx.draining) reason = co_await NotReadyReason(ctx, pool);
    if (!reason.empty()) reply.status = 503;
    reply.body = reason.empty() ? "ready\n" : reason + "\n";
  } else if (path == "/metrics") {
    reply.content_type = idem::http::kPrometheusTextType;
    reply.body = ctx.metrics.Render();
  } else {
    reply.status = 404;
    reply.body = "admin endpoints: /healthz /readyz /metrics\n";
  }
  co_return reply;
}

}  // namespace

asio::awaitable<void> AcceptAdmin(GatewayContext& ctx, UpstreamPool& pool,
                                  tcp::acceptor& acceptor) {
  auto answer = [&ctx, &pool](std::string_view path) { return AdminAnswer(ctx, pool, path); };
  co_await idem::http::AcceptAdmin(
      acceptor, std::make_shared<const idem::http::AdminHandler>(std::move(answer)));
}

}  // namespace idem::gateway
