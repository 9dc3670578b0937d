#include "gateway/lease_ticker.h"

#include <spdlog/spdlog.h>

#include <optional>

#include "gateway/log_format.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {

namespace {

// A heartbeat told the holder of `key` that its fence moved: someone else holds the key now. A
// call still running is cancelled (its outcome could never be recorded); a pending write's own
// result decides (its heartbeat may have come after the outcome it retries was applied).
void OnFenceMoved(GatewayContext& ctx, const InFlight::HeldKey& key) {
  std::optional<InFlight::HeldKey> running = ctx.in_flight.MarkLost(key.ticket);
  if (!running.has_value()) {
    spdlog::debug("heartbeat of key {} found its fence {} gone (its outcome may be recorded)",
                  LoggedKey(key.scope.key), key.fence);
    return;
  }
  spdlog::warn(
      "lease of key {} lost (fence {} moved: another holder took it over); its upstream call "
      "is cancelled and its outcome will not be recorded",
      LoggedKey(key.scope.key), key.fence);
  if (running->cancel == nullptr) return;
  asio::post(running->executor, [&ctx, ticket = key.ticket, cancel = running->cancel] {
    // On the call's own thread: while its ticket still runs, its frame (and signal) lives.
    if (ctx.in_flight.Running(ticket)) cancel->emit(asio::cancellation_type::terminal);
  });
}

}  // namespace

size_t BeatAll(GatewayContext& ctx, const asio::any_io_executor& executor) {
  const std::vector<InFlight::HeldKey> held = ctx.in_flight.HeldKeys();
  size_t beats = 0;
  for (const InFlight::HeldKey& key : held) {
    if (key.phase == InFlight::Phase::kWriting || key.lost) continue;
    ++beats;
    const auto sent = std::chrono::steady_clock::now();
    KeyOp op{.kind = KeyOp::Kind::kHeartbeat,
             .scope = key.scope,
             .lease = ctx.config.lease,
             .fence = key.fence};
    ctx.keys.Submit(std::move(op), executor, [&ctx, key, sent](KeyOpResult beat) {
      ctx.metrics.heartbeats.fetch_add(1, std::memory_order_relaxed);
      NoteStoreStatus(ctx, beat.status);
      if (beat.status.ok()) {
        // The store's remaining lease, counted from before the store saw the heartbeat.
        ctx.in_flight.RenewKey(key.ticket, sent + Millis(beat.lease_until_ms - beat.now_ms));
      } else if (absl::IsAborted(beat.status) && !ctx.in_flight.Renewing(key.ticket)) {
        // Submitted just before this holder's own outcome or release, and applied after it.
        spdlog::debug("heartbeat of key {} came after its outcome: {}", LoggedKey(key.scope.key),
                      beat.status.ToString());
      } else if (absl::IsAborted(beat.status)) {
        OnFenceMoved(ctx, key);
      } else {
        spdlog::warn("heartbeat of key {} failed: {}", LoggedKey(key.scope.key),
                     beat.status.ToString());
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
