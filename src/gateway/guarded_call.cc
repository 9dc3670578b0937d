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
#include "gateway/lapsed_key.h"
#include "gateway/log_format.h"
#include "gateway/pending_outcome.h"
#include "gateway/problem_json.h"
#include "gateway/record_outcome.h"
#include "gateway/recovery_note.h"
#include "gateway/status_takeover.h"
#include "idem/retry/backoff.h"
#include "idem/retry/deadline.h"
#include "idem/store.h"
#include "idem/uuid.h"

namespace idem::gateway {
namespace {

using Steady = std::chrono::steady_clock;
using asio::experimental::awaitable_operators::operator||;
constexpr Millis kWaitPoll = 50ms;  // a waiting duplicate looks again this often

// A store's words (which may name its user, host, port and database) go to the log only, under
// the request's id; its client gets a generic 503 naming that id (issue 37, item 10).
GuardedAnswer StoreFailure(const absl::Status& status, const std::string& request_id) {
  if (absl::IsInvalidArgument(status))
    return {ProblemResponse(ProblemFor(status, Origin::kStore)), Decision::kInvalid};
  // A record the store refuses for ever (a claim's note larger than it keeps): the client's to
  // fix, never a store fault to retry (issue 37, item 4).
  if (absl::IsOutOfRange(status)) {
    spdlog::warn("{}: the key store refused the claim for ever: {}; answering 413", request_id,
                 status.ToString());
    return {TooLargeToRecoverResponse(0, 0), Decision::kInvalid};
  }
  spdlog::error("{}: key store failed: {}; answering 503, nothing forwarded", request_id,
                status.ToString());
  return {ProblemResponse(StoreUnavailableProblem(request_id)), Decision::kStoreUnavailable};
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
                                                            Steady::time_point wait_until,
                                                            const std::string& request_id) {
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
    if (!got.status.ok()) co_return StoreFailure(got.status, request_id);
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

// Ends when the lease of `ticket` is about to lapse without renewal (or is no longer held), or
// when `lost` is emitted (its fence moved); cancelled (and ending at once) when the upstream call
// beside it ends first.
asio::awaitable<void> WatchLease(GatewayContext& ctx, uint64_t ticket,
                                 asio::cancellation_slot lost) {
  const Millis margin = LeaseMargin(ctx);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    std::optional<InFlight::SteadyTime> end = ctx.in_flight.LeaseEnd(ticket);
    if (!end.has_value() || Steady::now() >= *end - margin) co_return;
    timer.expires_at(*end - margin);
    auto [ec] = co_await timer.async_wait(
        asio::bind_cancellation_slot(lost, asio::as_tuple(asio::use_awaitable)));
    if (ec) co_return;
  }
}

// The upstream call of a held key, cancelled if its lease is about to lapse without renewal, or
// when `lost` is emitted (a heartbeat found its fence moved).
asio::awaitable<UpstreamAnswer> ForwardWithinLease(GatewayContext& ctx, UpstreamPool& pool,
                                                   uint64_t ticket, const Scope& scope,
                                                   asio::cancellation_signal& lost,
                                                   http::request<http::string_body> request) {
  // A lease is never shortened, so when the one known now outlasts the whole upstream call (its
  // deadline is the upstream timeout), nothing needs watching: the usual case, as the timeout is
  // well inside the lease. The watch beside the call costs a coroutine, a timer and a parallel
  // group for every request.
  const std::optional<InFlight::SteadyTime> end = ctx.in_flight.LeaseEnd(ticket);
  if (end.has_value() && Steady::now() + ctx.config.upstream_timeout <= *end - LeaseMargin(ctx))
    co_return co_await ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout,
                                       lost.slot());
  std::variant<UpstreamAnswer, std::monostate> ended =
      co_await (ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout) ||
                WatchLease(ctx, ticket, lost.slot()));
  if (ended.index() == 0) co_return std::get<0>(std::move(ended));
  if (ctx.in_flight.Lost(ticket)) co_return UpstreamAnswer{.response = absl::CancelledError("")};
  spdlog::error(
      "key {}: its lease was about to lapse without renewal (heartbeats failed); the "
      "upstream call was cancelled",
      LoggedKey(scope.key));
  co_return UpstreamAnswer{.response = absl::DeadlineExceededError(
                               "the upstream call was cancelled: the gateway could not renew its "
                               "hold on the key; retry with the same idempotency key")};
}

// Forwards a request whose key this process holds (`fence`, its lease known to run to
// `lease_end`); the gateway-wide LeaseTicker keeps the lease alive meanwhile, and cancels the call
// when the fence moves. Then records the outcome (RecordOutcome).
asio::awaitable<GuardedAnswer> Execute(GatewayContext& ctx, UpstreamPool& pool, const Route& route,
                                       const GuardedRequest& guarded, int64_t fence,
                                       Steady::time_point lease_end,
                                       http::request<http::string_body> request) {
  asio::cancellation_signal lost;  // emitted on this thread by the LeaseTicker (OnFenceMoved)
  asio::any_io_executor executor = co_await asio::this_coro::executor;
  const uint64_t ticket =
      ctx.in_flight.HoldKey(guarded.scope, fence, lease_end, std::move(executor), &lost);
  ctx.metrics.keys_in_flight.fetch_add(1, std::memory_order_relaxed);
  request.set(retry::kDeadlineHeader, retry::FormatDeadlineHeader(ctx.config.upstream_timeout));
  // The holder's fence, over any value the client sent: an upstream may refuse an older holder.
  if (!route.fence_header.empty()) request.set(route.fence_header, std::to_string(fence));
  const auto start = Steady::now();
  UpstreamAnswer upstream =
      co_await ForwardWithinLease(ctx, pool, ticket, guarded.scope, lost, std::move(request));
  // The forward is over, and the handlers its operations left in `lost`'s slot name timers that
  // are gone: a fence found moved while the outcome is being recorded must find the slot empty
  // (emitting into it read freed memory: the storm's seed 4 on PostgreSQL, tests/storm/FINDINGS.md).
  lost.slot().clear();
  ctx.metrics.upstream_seconds.Observe(Steady::now() - start);
  // Someone else holds the key now: nothing this holder writes would be taken.
  if (ctx.in_flight.Lost(ticket)) co_return LostKeyAnswer(ctx, guarded.scope, ticket, fence);
  co_return co_await RecordOutcome(ctx, route, guarded, ticket, fence, std::move(upstream));
}

// This request's lease owner: a label for people (`idem keys`), the gateway's name and the
// request id, which the client may send and so may share with another request. Whose a record
// is, is told by the claim's nonce alone (ResolveClaim).
std::string OwnerOf(const GatewayContext& ctx, const std::string& request_id) {
  std::string owner;  // sized once: `a + "/" + b` grows its first temporary again
  owner.reserve(ctx.owner.size() + 1 + request_id.size());
  owner.append(ctx.owner).append("/").append(request_id);
  return owner;
}

// A claim whose write failed with Unavailable or DeadlineExceeded may have been applied (its
// acknowledgement lost). Reads the key, with backoff while the store does not answer, until
// `until`: the record when the key is in_progress with `claim_nonce`, the nonce this claim
// attempt drew (it holds the key), else nullopt (the claim was not applied, or the store did not
// answer in time). Never the owner: another request may send the same X-Request-Id.
asio::awaitable<std::optional<KeyRecord>> ResolveClaim(GatewayContext& ctx,
                                                       const GuardedRequest& guarded,
                                                       const std::string& claim_nonce,
                                                       Steady::time_point until) {
  retry::Backoff backoff =
      *retry::Backoff::Create({.jitter = retry::Jitter::kFull, .base = 50ms, .cap = 500ms},
                              static_cast<uint64_t>(until.time_since_epoch().count()));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  for (;;) {
    KeyOp op{.kind = KeyOp::Kind::kGet, .scope = guarded.scope};
    KeyOpResult got = co_await AwaitKeyOp(ctx, std::move(op));
    if (got.status.ok()) {
      if (got.record.state == KeyState::kInProgress && got.record.claim_nonce == claim_nonce)
        co_return std::move(got.record);
      co_return std::nullopt;
    }
    if (!absl::IsUnavailable(got.status) && !absl::IsDeadlineExceeded(got.status))
      co_return std::nullopt;  // NotFound: the claim was not applied
    const Millis delay = backoff.NextDelay();
    if (Steady::now() + delay >= until) co_return std::nullopt;
    timer.expires_after(delay);
    co_await timer.async_wait(kTuple);
  }
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
  // Past the bound of outcomes kept for recording, nothing new is forwarded (never an outcome
  // dropped to make room).
  if (!RoomForOutcomes(ctx))
    co_return GuardedAnswer{TooManyPendingResponse(), Decision::kStoreUnavailable};
  const auto wait_until =
      Steady::now() + (route.in_flight == InFlightPolicy::kWait ? route.wait_max : Millis(0));
  // A route that recovers lapsed claims stores the request with its claim (recovery_note.h).
  const StoredResponse note = route.recover != RecoverMode::kOff
                                  ? EncodeNote(StoredNoteOf(request, route))
                                  : StoredResponse{};
  // A note larger than the store keeps would be refused for ever: refused here, before any claim.
  if (const int64_t note_bytes = StoredResponseBytes(note);
      route.recover != RecoverMode::kOff && pool.store_limit > 0 && note_bytes > pool.store_limit)
    co_return GuardedAnswer{TooLargeToRecoverResponse(note_bytes, pool.store_limit),
                            Decision::kInvalid};
  for (;;) {
    const auto sent = Steady::now();
    // Unique to this claim attempt and unguessable: what tells its record from another's.
    const std::string nonce = NewClaimNonce();
    // GCC 12 miscompiles aggregate temporaries inside co_await expressions: name them first.
    KeyOp op{.kind = KeyOp::Kind::kClaim,
             .scope = guarded.scope,
             .fingerprint = guarded.fingerprint,
             .owner = OwnerOf(ctx, request_id),
             .lease = ctx.config.lease,
             .response = note,
             .claim_nonce = nonce};
    KeyOpResult claim = co_await AwaitKeyOp(ctx, std::move(op));
    if (absl::IsUnavailable(claim.status) || absl::IsDeadlineExceeded(claim.status)) {
      std::optional<KeyRecord> ours =
          co_await ResolveClaim(ctx, guarded, nonce, sent + ctx.config.record_wait);
      if (!ours.has_value()) co_return StoreFailure(claim.status, request_id);
      spdlog::info(
          "{}: the claim of key {} was applied although the store reported {}; "
          "carrying on with fence {}",
          request_id, LoggedKey(guarded.scope.key), claim.status.ToString(), ours->fence);
      // Whether this claim took a lapsed key over is not known: on a status route the status
      // URL is asked first (for a key that was new it answers 404, and the request is sent).
      // The claim ran after `sent`, so its lease runs at least a lease past it.
      Steady::time_point lease_end = sent + ctx.config.lease;
      if (ActionOnLapsedKey(route) == LapsedKeyAction::kAskStatus) {
        std::optional<GuardedAnswer> settled = co_await AskStatusOfTakenOverKey(
            ctx, pool, route, guarded, ours->fence, &lease_end, request);
        if (settled.has_value()) co_return *std::move(settled);
      }
      co_return co_await Execute(ctx, pool, route, guarded, ours->fence, lease_end,
                                 std::move(request));
    }
    if (!claim.status.ok()) co_return StoreFailure(claim.status, request_id);
    const ClaimDecision decision =
        DecideClaim(claim.claimed, claim.record, guarded.fingerprint, claim.now_ms);
    switch (decision.kind) {
      case ClaimDecision::Kind::kForward: {
        Steady::time_point lease_end = LeaseEndOf(sent, claim.lease_until_ms, claim.now_ms);
        if (claim.taken_over) {
          spdlog::info("{} took over key {} (fence {}): its earlier holder's lease lapsed",
                       request_id, LoggedKey(guarded.scope.key), claim.record.fence);
          // The earlier holder's request may have run: on a status route only the status URL
          // settles the key (lapsed_key.h); it is sent again only if that says it never ran.
          if (ActionOnLapsedKey(route) == LapsedKeyAction::kAskStatus) {
            std::optional<GuardedAnswer> settled = co_await AskStatusOfTakenOverKey(
                ctx, pool, route, guarded, claim.record.fence, &lease_end, request);
            if (settled.has_value()) co_return *std::move(settled);
          }
        }
        co_return co_await Execute(ctx, pool, route, guarded, claim.record.fence, lease_end,
                                   std::move(request));
      }
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
        co_await WaitForHolder(ctx, guarded, claim, sent, wait_until, request_id);
    if (waited.has_value()) co_return *std::move(waited);
  }
}

asio::awaitable<GuardedAnswer> ForwardUnguarded(GatewayContext& ctx, UpstreamPool& pool,
                                                http::request<http::string_body> request) {
  const auto start = Steady::now();
  UpstreamAnswer upstream =
      co_await ForwardBuffered(pool, std::move(request), ctx.config.upstream_timeout);
  ctx.metrics.upstream_seconds.Observe(Steady::now() - start);
  if (!upstream.response.ok())
    co_return GuardedAnswer{
        ProblemResponse(ProblemFor(upstream.response.status(), Origin::kUpstream)),
        Decision::kUpstreamError};
  co_return GuardedAnswer{*std::move(upstream.response), Decision::kPassThrough};
}

}  // namespace idem::gateway
