#include "gateway/admin.h"

#include <memory>
#include <string>

#include "http/admin_server.h"

namespace idem::gateway {
namespace {

// Why the gateway is not ready, or "" when it is.
asio::awaitable<std::string> NotReadyReason(GatewayContext& ctx, UpstreamPool& pool) {
  const Scope probe_key{.tenant = "", .key = "idem-readiness-probe"};
  KeyOp op{.kind = KeyOp::Kind::kGet, .scope = probe_key};
  KeyOpResult probe = co_await AwaitKeyOp(ctx, std::move(op));
  if (!probe.status.ok() && !absl::IsNotFound(probe.status))
    co_return "key store unavailable: " + std::string(probe.status.message());
  // Reads may work while writes do not (a store locked by another process, a full disk, a
  // primary gone): after a failed write, a write decides (a heartbeat of a key nobody holds,
  // which changes nothing; any answer but Unavailable means writes go through again).
  if (ctx.store_unreachable.load(std::memory_order_relaxed)) {
    KeyOp beat{.kind = KeyOp::Kind::kHeartbeat, .scope = probe_key, .lease = ctx.config.lease,
               .fence = 1};
    KeyOpResult wrote = co_await AwaitKeyOp(ctx, std::move(beat));
    if (absl::IsUnavailable(wrote.status))
      co_return "key store unavailable for writes: " + std::string(wrote.status.message());
  }
  absl::Status upstream = co_await ProbeUpstream(pool, 1s);
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
