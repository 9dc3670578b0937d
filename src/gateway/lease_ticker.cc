#include "gateway/lease_ticker.h"

#include <spdlog/spdlog.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {

size_t BeatAll(GatewayContext& ctx, const asio::any_io_executor& executor) {
  const std::vector<InFlight::HeldKey> held = ctx.in_flight.HeldKeys();
  size_t beats = 0;
  for (const InFlight::HeldKey& key : held) {
    if (key.finishing) continue;
    ++beats;
    const auto sent = std::chrono::steady_clock::now();
    KeyOp op{.kind = KeyOp::Kind::kHeartbeat,
             .scope = key.scope,
             .lease = ctx.config.lease,
             .fence = key.fence};
    ctx.keys.Submit(std::move(op), executor, [&ctx, key, sent](KeyOpResult beat) {
      ctx.metrics.heartbeats.fetch_add(1, std::memory_order_relaxed);
      if (beat.status.ok()) {
        // The store's remaining lease, counted from before the store saw the heartbeat.
        ctx.in_flight.RenewKey(key.ticket, sent + Millis(beat.lease_until_ms - beat.now_ms));
      } else if (absl::IsAborted(beat.status) && !ctx.in_flight.Renewing(key.ticket)) {
        // Submitted just before this holder's own outcome or release, and applied after it.
        spdlog::debug("heartbeat of key '{}' came after its outcome: {}", key.scope.key,
                      beat.status.ToString());
      } else if (absl::IsAborted(beat.status)) {
        spdlog::warn("lease of key '{}' lost (fence {} moved); its outcome will not be recorded",
                     key.scope.key, key.fence);
      } else {
        spdlog::warn("heartbeat of key '{}' failed: {}", key.scope.key, beat.status.ToString());
      }
    });
  }
  return beats;
}

asio::awaitable<void> RunLeaseTicker(GatewayContext& ctx) {
  auto executor = co_await asio::this_coro::executor;
  asio::steady_timer timer(executor);
  for (;;) {
    timer.expires_after(ctx.config.lease / 3);
    auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    BeatAll(ctx, executor);
  }
}

}  // namespace idem::gateway
