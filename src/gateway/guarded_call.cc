#include "gateway/guarded_call.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <variant>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#pragma GCC diagnostic pop

#include "gateway/forward.h"
#include "gateway/guard_outcome.h"
#include "gateway/problem_json.h"
#include "idem/retry/deadline.h"

namespace idem::gateway {
namespace {

using Steady = std::chrono::steady_clock;
using asio::experimental::awaitable_operators::operator||;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr Millis kWaitPoll = 50ms;  // a waiting duplicate looks again this often

GuardedAnswer StoreFailure(const absl::Status& status) {
  const Decision decision =
      absl::IsInvalidArgument(status) ? Decision::kInvalid : Decision::kStoreUnavailable;
  if (decision == Decision::kStoreUnavailable)
    spdlog::error("key store failed: {}; answering 503, nothing forwarded", status.ToString());
  return {ProblemResponse(ProblemFor(status, Origin::kStore)), decision};
}

// The answer from a finished outcome: its replay, or 422 when it belongs to another request.
GuardedAnswer FromOutcome(const CachedOutcome& outcome, const std::string& fingerprint) {
  if (outcome.fingerprint != fingerprint) return {MismatchResponse(), Decision::kMismatch};
  return {ReplayResponse(outcome.response), Decision::kReplayed};
}

// Remembers a finished record a store call returned, until it expires.
void CacheRecord(GatewayContext& ctx, const Scope& scope, const KeyRecord& record) {
  if (record.state == KeyState::kInProgress) return;
  ctx.cache.Put(scope, {record.fingerprint, record.response}, record.expires_ms);
}

// When the lease of a claim result runs out by this host's steady clock: the store's remaining
// lease counted from `sent`, the time the claim was submitted (before the store saw it).
Steady::time_point LeaseEndOf(Steady::time_point sent, int64_t lease_until_ms, int64_t now_ms) {
  return sent + Millis(lease_until_ms - now_ms);
}

int SecondsUntil(Steady::time_point end) {
  const auto left = std::chrono::duration_cast<Millis>(end - Steady::now()).count();
  return static_cast<int>(std::max<int64_t>((left + 999) / 1000, 1));
}

// What a record found by a read answers: 422 when it belongs to another request, the replay of a
// finished outcome; nullopt while it is in flight.
std::optional<GuardedAnswer> FromRecord(GatewayContext& ctx, const GuardedRequest& guarded,
                                        const KeyRecord& record) {
  if (record.fingerprint != guarded.fingerprint)
    return GuardedAnswer{MismatchResponse(), Decision::kMismatch};
  if (record.state == KeyState::kInProgress) return std::nullopt;
  CacheRecord(ctx, guarded.scope, record);
  return GuardedAnswer{ReplayResponse(record.response), Decision::kReplayed};
}

// Waits (reading, never writing) for the holder of `claim` to finish, until `wait_until`: its
// outcome's replay (or 422), a 409 when the wait bound passes first, or nullopt when the key
// should be claimed again (released, changed hands, or its lease may have lapsed).
asio::awaitable<std::optional<GuardedAnswer>> WaitForHolder(GatewayContext& ctx,
                                                            const GuardedRequest& guarded,
                                                            const KeyOpResult& claim,
                                                            Steady::time_point sent,
                                                            Steady::time_point wait_until) {
  Steady::time_point lapse = LeaseEndOf(sent, claim.record.lease_until_ms, claim.now_ms);
  int64_t known_until = claim.record.lease_until_ms;
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    const auto now = Steady::now();
    if (now >= lapse) co_return std::nullopt;
    if (now >= wait_until)
      co_return GuardedAnswer{InFlightResponse(SecondsUntil(lapse)), Decision::kInFlight};
    timer.expires_after(std::min<Steady::duration>({kWaitPoll, wait_until - now, lapse - now}));
    co_await timer.async_wait(kTuple);
    KeyOp op{.kind = KeyOp::Kind::kGet, .scope = guarded.scope};
    KeyOpResult got = co_await AwaitKeyOp(ctx, std::move(op));
    if (absl::IsNotFound(got.status)) co_return std::nullopt;
    if (!got.status.ok()) co_return StoreFailure(got.status);
    if (std::optional<GuardedAnswer> answer = FromRecord(ctx, guarded, got.record))
      co_return answer;
    if (got.record.fence != claim.record.fence) co_return std::nullopt;
    lapse += Millis(got.record.lease_until_ms - known_until);  // heartbeats moved the lease on
    known_until = got.record.lease_until_ms;
  }
}

// How long before its lease lapses an upstream call is cancelled when the lease was not renewed.
Millis LeaseMargin(const GatewayContext& ctx) {
  return std::max<Millis>(ctx.config.lease / 6, 1ms);
}

// Ends when the lease of `ticket` is about to lapse without renewal (or is no longer held);
// cancelled (and ending at once) when the upstream call beside it ends first.
asio::awaitable<void> WatchLease(GatewayContext& ctx, uint64_t ticket) {
  const Millis margin = LeaseMargin(ctx);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    std::optional<InFlight::SteadyTime> end = ctx.in_flight.LeaseEnd(ticket);
    if (!end.has_value() || Steady::now() >= *end - margin) co_return;
    timer.expires_at(*end - margin);
    auto [ec] = co_await timer.async_wait(kTuple);
    if (ec) co_return;
  }
}

// The upstream call of a held key, cancelled if its lease is about to lapse without renewal.
asio::awaitable<absl::StatusOr<StoredResponse>> ForwardWithinLease(
    GatewayContext& ctx, UpstreamPool& pool, uint64_t ticket, const Scope& scope,
    http::request<http::string_body> request) {
  // A lease is never shortened, so when the one known now outlasts the whole upstream call (its
  // deadline is the upstream timeout), nothing needs watching: the usual case, as the timeout is
  // well inside the lease. The watch beside the call costs a coroutine, a timer and a parallel
  // group for every request.
  const std::optional<InFlight::SteadyTime> end = ctx.in_flight.LeaseEnd(ticket);
  if (end.has_value() && Steady::now() + ctx.config.upstream_timeout <= *end - LeaseMargin(ctx))
    co_return co_await ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout);
  std::variant<absl::StatusOr<StoredResponse>, std::monostate> ended =
      co_await (ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout) ||
                WatchLease(ctx, ticket));
  if (ended.index() == 0) co_return std::get<0>(std::move(ended));
  spdlog::error(
      "key '{}': its lease was about to lapse without renewal (heartbeats failed); the "
      "upstream call was cancelled",
      scope.key);
  co_return absl::DeadlineExceededError(
      "the upstream call was cancelled: the gateway could not renew its hold on the key; retry "
      "with the same idempotency key");
}

// Records what the upstream answered (or releases the key) and returns the client's answer. A
// recorded outcome is cached until it expires (the store's retention, counted from before the
// write).
asio::awaitable<GuardedAnswer> Record(GatewayContext& ctx, const Route& route,
                                      const GuardedRequest& guarded, int64_t fence,
                                      absl::StatusOr<StoredResponse> upstream) {
  const std::optional<OutcomeClass> outcome =
      upstream.ok() ? std::optional(ClassifyOutcome(route, upstream->status)) : std::nullopt;
  if (!outcome.has_value() || *outcome == OutcomeClass::kTransient) {
    KeyOp op{.kind = KeyOp::Kind::kRelease, .scope = guarded.scope, .fence = fence};
    KeyOpResult released = co_await AwaitKeyOp(ctx, std::move(op));
    if (!released.status.ok())
      spdlog::warn("releasing key '{}' failed: {}; it frees itself when its lease lapses",
                   guarded.scope.key, released.status.ToString());
    if (!upstream.ok())
      co_return GuardedAnswer{ProblemResponse(ProblemFor(upstream.status(), Origin::kUpstream)),
                              Decision::kUpstreamError};
    co_return GuardedAnswer{*std::move(upstream), Decision::kTransient};
  }
  const bool final_failure = *outcome == OutcomeClass::kFailedFinal;
  const int64_t written_from = ctx.cache.NowMillis();
  KeyOp op{.kind = final_failure ? KeyOp::Kind::kFailFinal : KeyOp::Kind::kComplete,
           .scope = guarded.scope,
           .fence = fence,
           .response = ToStored(*upstream, route)};
  StoredResponse stored = op.response;
  KeyOpResult recorded = co_await AwaitKeyOp(ctx, std::move(op));
  if (recorded.status.ok()) {
    ctx.cache.Put(guarded.scope, {guarded.fingerprint, std::move(stored)},
                  written_from + ctx.config.retention.count());
  } else {
    spdlog::error(
        "recording the outcome of key '{}' failed: {}; a retry after the lease lapses "
        "re-sends it upstream with the same key",
        guarded.scope.key, recorded.status.ToString());
  }
  co_return GuardedAnswer{*std::move(upstream), Decision::kExecuted};
}

// Forwards a request whose key this process holds (`claim`, submitted at `sent`); the
// gateway-wide LeaseTicker keeps the lease alive meanwhile.
asio::awaitable<GuardedAnswer> Execute(GatewayContext& ctx, UpstreamPool& pool, const Route& route,
                                       const GuardedRequest& guarded, const KeyOpResult& claim,
                                       Steady::time_point sent,
                                       http::request<http::string_body> request) {
  const int64_t fence = claim.record.fence;
  const uint64_t ticket = ctx.in_flight.HoldKey(
      guarded.scope, fence, LeaseEndOf(sent, claim.lease_until_ms, claim.now_ms));
  ctx.metrics.keys_in_flight.fetch_add(1, std::memory_order_relaxed);
  request.set(retry::kDeadlineHeader, retry::FormatDeadlineHeader(ctx.config.upstream_timeout));
  const auto start = Steady::now();
  absl::StatusOr<StoredResponse> upstream =
      co_await ForwardWithinLease(ctx, pool, ticket, guarded.scope, std::move(request));
  ctx.metrics.upstream_seconds.Observe(Steady::now() - start);
  ctx.in_flight.StopRenewing(ticket);
  GuardedAnswer answer = co_await Record(ctx, route, guarded, fence, std::move(upstream));
  ctx.in_flight.ForgetKey(ticket);
  ctx.metrics.keys_in_flight.fetch_sub(1, std::memory_order_relaxed);
  co_return answer;
}

}  // namespace

asio::awaitable<GuardedAnswer> RunGuarded(GatewayContext& ctx, UpstreamPool& pool,
                                          const Route& route, const GuardedRequest& guarded,
                                          http::request<http::string_body> request,
                                          const std::string& request_id) {
  // A finished outcome not in memory is answered by the claim itself: in the next batch the claim
  // finds the record and writes nothing. A read first would cost every new key a second trip to
  // the store threads for nothing.
  if (std::shared_ptr<const CachedOutcome> cached = ctx.cache.Find(guarded.scope))
    co_return FromOutcome(*cached, guarded.fingerprint);
  const auto wait_until =
      Steady::now() + (route.in_flight == InFlightPolicy::kWait ? route.wait_max : Millis(0));
  for (;;) {
    const auto sent = Steady::now();
    // GCC 12 miscompiles aggregate temporaries inside co_await expressions: name them first.
    std::string owner;  // sized once: `a + "/" + b` grows its first temporary again
    owner.reserve(ctx.owner.size() + 1 + request_id.size());
    owner.append(ctx.owner).append("/").append(request_id);
    KeyOp op{.kind = KeyOp::Kind::kClaim,
             .scope = guarded.scope,
             .fingerprint = guarded.fingerprint,
             .owner = std::move(owner),
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
        co_return co_await Execute(ctx, pool, route, guarded, claim, sent, std::move(request));
      case ClaimDecision::Kind::kReplay:
        CacheRecord(ctx, guarded.scope, claim.record);
        co_return GuardedAnswer{ReplayResponse(claim.record.response), Decision::kReplayed};
      case ClaimDecision::Kind::kMismatch:
        co_return GuardedAnswer{MismatchResponse(), Decision::kMismatch};
      case ClaimDecision::Kind::kInFlight:
        break;
    }
    if (Steady::now() >= wait_until)
      co_return GuardedAnswer{InFlightResponse(decision.retry_after_seconds), Decision::kInFlight};
    std::optional<GuardedAnswer> waited =
        co_await WaitForHolder(ctx, guarded, claim, sent, wait_until);
    if (waited.has_value()) co_return *std::move(waited);
  }
}

asio::awaitable<GuardedAnswer> ForwardUnguarded(GatewayContext& ctx, UpstreamPool& pool,
                                                http::request<http::string_body> request) {
  const auto start = Steady::now();
  absl::StatusOr<StoredResponse> upstream =
      co_await ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout);
  ctx.metrics.upstream_seconds.Observe(Steady::now() - start);
  if (!upstream.ok())
    co_return GuardedAnswer{ProblemResponse(ProblemFor(upstream.status(), Origin::kUpstream)),
                            Decision::kUpstreamError};
  co_return GuardedAnswer{*std::move(upstream), Decision::kPassThrough};
}

}  // namespace idem::gateway
