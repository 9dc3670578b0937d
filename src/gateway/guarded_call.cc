#include "gateway/guarded_call.h"

#include <spdlog/spdlog.h>

#include <memory>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

#include "gateway/forward.h"
#include "gateway/guard_outcome.h"
#include "gateway/problem_json.h"
#include "idem/retry/deadline.h"

namespace idem::gateway {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr Millis kWaitPoll = 50ms;  // a waiting duplicate looks again this often

GuardedAnswer StoreFailure(const absl::Status& status) {
  const Decision decision =
      absl::IsInvalidArgument(status) ? Decision::kInvalid : Decision::kStoreUnavailable;
  if (decision == Decision::kStoreUnavailable)
    spdlog::error("key store failed: {}; answering 503, nothing forwarded", status.ToString());
  return {ProblemResponse(ProblemFor(status, Origin::kStore)), decision};
}

struct LeaseKeeper {
  explicit LeaseKeeper(asio::any_io_executor executor) : timer(std::move(executor)) {}
  asio::steady_timer timer;
  bool done = false;
  bool lost = false;
};

// Extends the lease every third of its length until told to stop or the fence moves.
asio::awaitable<void> KeepLeased(GatewayContext& ctx, std::shared_ptr<LeaseKeeper> keeper,
                                 Scope scope, int64_t fence) {
  while (!keeper->done) {
    keeper->timer.expires_after(ctx.config.lease / 3);
    co_await keeper->timer.async_wait(kTuple);
    if (keeper->done) break;
    // GCC 12 miscompiles aggregate temporaries inside co_await expressions: name them first.
    KeyOp op{
        .kind = KeyOp::Kind::kHeartbeat, .scope = scope, .lease = ctx.config.lease, .fence = fence};
    KeyOpResult beat = co_await AwaitKeyOp(ctx, std::move(op));
    ctx.metrics.heartbeats.fetch_add(1, std::memory_order_relaxed);
    if (absl::IsAborted(beat.status)) {
      keeper->lost = true;
      spdlog::warn("lease of key '{}' lost (fence {} moved); its outcome will not be recorded",
                   scope.key, fence);
      break;
    }
    if (!beat.status.ok()) spdlog::warn("heartbeat failed: {}", beat.status.ToString());
  }
}

// Records what the upstream answered (or releases the key) and returns the client's answer.
asio::awaitable<GuardedAnswer> Record(GatewayContext& ctx, const Route& route, const Scope& scope,
                                      int64_t fence,
                                      const absl::StatusOr<StoredResponse>& upstream) {
  if (!upstream.ok() ||
      ClassifierFor(route).Classify(upstream->status) == OutcomeClass::kTransient) {
    KeyOp op{.kind = KeyOp::Kind::kRelease, .scope = scope, .fence = fence};
    KeyOpResult released = co_await AwaitKeyOp(ctx, std::move(op));
    if (!released.status.ok())
      spdlog::warn("releasing key '{}' failed: {}; it frees itself when its lease lapses",
                   scope.key, released.status.ToString());
    if (!upstream.ok())
      co_return GuardedAnswer{ProblemResponse(ProblemFor(upstream.status(), Origin::kUpstream)),
                              Decision::kUpstreamError};
    co_return GuardedAnswer{*upstream, Decision::kTransient};
  }
  const bool final_failure =
      ClassifierFor(route).Classify(upstream->status) == OutcomeClass::kFailedFinal;
  KeyOp op{.kind = final_failure ? KeyOp::Kind::kFailFinal : KeyOp::Kind::kComplete,
           .scope = scope,
           .fence = fence,
           .response = ToStored(*upstream, route)};
  KeyOpResult recorded = co_await AwaitKeyOp(ctx, std::move(op));
  if (!recorded.status.ok())
    spdlog::error(
        "recording the outcome of key '{}' failed: {}; a retry after the lease lapses "
        "re-sends it upstream with the same key",
        scope.key, recorded.status.ToString());
  co_return GuardedAnswer{*upstream, Decision::kExecuted};
}

// Forwards a request whose key this process holds with `fence`, keeping the lease alive.
asio::awaitable<GuardedAnswer> Execute(GatewayContext& ctx, UpstreamPool& pool, const Route& route,
                                       const Scope& scope, int64_t fence,
                                       http::request<http::string_body> request) {
  const uint64_t ticket = ctx.in_flight.HoldKey(scope, fence);
  ctx.metrics.keys_in_flight.fetch_add(1, std::memory_order_relaxed);
  auto executor = co_await asio::this_coro::executor;
  auto keeper = std::make_shared<LeaseKeeper>(executor);
  asio::co_spawn(executor, KeepLeased(ctx, keeper, scope, fence), asio::detached);
  request.set(std::string(retry::kDeadlineHeader),
              retry::FormatDeadlineHeader(ctx.config.upstream_timeout));
  const auto start = Clock::now();
  absl::StatusOr<StoredResponse> upstream =
      co_await ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout);
  ctx.metrics.upstream_seconds.Observe(Clock::now() - start);
  keeper->done = true;
  keeper->timer.cancel();
  GuardedAnswer answer = co_await Record(ctx, route, scope, fence, upstream);
  ctx.in_flight.ForgetKey(ticket);
  ctx.metrics.keys_in_flight.fetch_sub(1, std::memory_order_relaxed);
  co_return answer;
}

}  // namespace

asio::awaitable<GuardedAnswer> RunGuarded(GatewayContext& ctx, UpstreamPool& pool,
                                          const Route& route, const GuardedRequest& guarded,
                                          http::request<http::string_body> request,
                                          const std::string& request_id) {
  const auto wait_until =
      Clock::now() + (route.in_flight == InFlightPolicy::kWait ? route.wait_max : Millis(0));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    KeyOp op{.kind = KeyOp::Kind::kClaim,
             .scope = guarded.scope,
             .fingerprint = guarded.fingerprint,
             .owner = ctx.owner + "/" + request_id,
             .lease = ctx.config.lease};
    KeyOpResult claim = co_await AwaitKeyOp(ctx, std::move(op));
    if (!claim.status.ok()) co_return StoreFailure(claim.status);
    const ClaimDecision decision =
        DecideClaim(claim.claimed, claim.record, guarded.fingerprint, claim.now_ms);
    switch (decision.kind) {
      case ClaimDecision::Kind::kForward:
        if (claim.taken_over)
          spdlog::info("{} took over key '{}' (fence {}): its earlier holder's lease lapsed",
                       request_id, guarded.scope.key, claim.record.fence);
        co_return co_await Execute(ctx, pool, route, guarded.scope, claim.record.fence,
                                   std::move(request));
      case ClaimDecision::Kind::kReplay:
        co_return GuardedAnswer{ReplayResponse(claim.record.response), Decision::kReplayed};
      case ClaimDecision::Kind::kMismatch:
        co_return GuardedAnswer{MismatchResponse(), Decision::kMismatch};
      case ClaimDecision::Kind::kInFlight:
        break;
    }
    const auto now = Clock::now();
    if (now >= wait_until)
      co_return GuardedAnswer{InFlightResponse(decision.retry_after_seconds), Decision::kInFlight};
    timer.expires_after(std::min<Clock::duration>(kWaitPoll, wait_until - now));
    co_await timer.async_wait(kTuple);
  }
}

asio::awaitable<GuardedAnswer> ForwardUnguarded(GatewayContext& ctx, UpstreamPool& pool,
                                                http::request<http::string_body> request) {
  const auto start = Clock::now();
  absl::StatusOr<StoredResponse> upstream =
      co_await ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout);
  ctx.metrics.upstream_seconds.Observe(Clock::now() - start);
  if (!upstream.ok())
    co_return GuardedAnswer{ProblemResponse(ProblemFor(upstream.status(), Origin::kUpstream)),
                            Decision::kUpstreamError};
  co_return GuardedAnswer{*upstream, Decision::kPassThrough};
}

}  // namespace idem::gateway
