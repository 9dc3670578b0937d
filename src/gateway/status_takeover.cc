#include "gateway/status_takeover.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "gateway/answer_verdict.h"
#include "gateway/guard_outcome.h"
#include "gateway/lapsed_key.h"
#include "gateway/log_format.h"
#include "gateway/recovery_note.h"
#include "idem/retry/deadline.h"

namespace idem::gateway {
namespace {

using Metric = Metrics::Recovered;
constexpr int kNotRecordedRetryAfter = 1;  // seconds

int CeilSeconds(Millis d) {
  return static_cast<int>(std::max<int64_t>((d.count() + 999) / 1000, 1));
}

// Records the status URL's answer as the key's outcome and returns its replay.
asio::awaitable<GuardedAnswer> Record(GatewayContext& ctx, const GuardedRequest& guarded,
                                      int64_t fence, AnswerVerdict verdict) {
  const bool done = verdict.kind == AnswerVerdict::Kind::kCompleted;
  const int64_t written_from = ctx.cache.NowMillis();
  // GCC 12 miscompiles aggregate temporaries inside co_await expressions: named first.
  KeyOp op{.kind = done ? KeyOp::Kind::kComplete : KeyOp::Kind::kFailFinal,
           .scope = guarded.scope,
           .fence = fence,
           .response = std::move(verdict.stored)};
  KeyOpResult written = co_await AwaitKeyOp(ctx, std::move(op));
  if (!written.status.ok()) {
    spdlog::warn(
        "key {}: the status URL's answer was not recorded ({}); its lease lapses and it is asked "
        "again",
        LoggedKey(guarded.scope.key), written.status.ToString());
    co_return GuardedAnswer{
        NotRecordedResponse("the upstream's status URL answered for this idempotency key, but "
                            "the gateway could not record that answer; retry with the same key",
                            kNotRecordedRetryAfter),
        Decision::kStoreUnavailable};
  }
  spdlog::info("key {}: taken over and settled by its status URL: recorded {}",
               LoggedKey(guarded.scope.key), done ? "completed" : "failed");
  ctx.metrics.CountRecovered(done ? Metric::kCompleted : Metric::kFailedFinal);
  ctx.cache.Put(guarded.scope, {guarded.fingerprint, written.sent},
                written_from + ctx.config.retention.count());
  co_return GuardedAnswer{ReplayResponse(written.sent), Decision::kReplayed};
}

// Keeps the key held for recover_interval, after which the completer or the next retry asks
// again; returns the 409 saying when.
asio::awaitable<GuardedAnswer> AskLater(GatewayContext& ctx, const GuardedRequest& guarded,
                                        int64_t fence, const std::string& why) {
  KeyOp op{.kind = KeyOp::Kind::kHeartbeat,
           .scope = guarded.scope,
           .lease = ctx.config.recover_interval,
           .fence = fence};
  KeyOpResult held = co_await AwaitKeyOp(ctx, std::move(op));
  // Without the heartbeat the claim's own lease stands.
  const Millis until = held.status.ok() ? ctx.config.recover_interval : ctx.config.lease;
  spdlog::info("key {}: taken over, its status URL gave no verdict ({}); asked again in {} ms",
               LoggedKey(guarded.scope.key), why, until.count());
  co_return GuardedAnswer{InFlightResponse(CeilSeconds(until)), Decision::kInFlight};
}

}  // namespace

asio::awaitable<std::optional<GuardedAnswer>> AskStatusOfTakenOverKey(
    GatewayContext& ctx, UpstreamPool& pool, const Route& route, const GuardedRequest& guarded,
    int64_t fence, const http::request<http::string_body>& request) {
  ctx.metrics.recovery_attempts.fetch_add(1, std::memory_order_relaxed);
  http::request<http::string_body> ask = StatusRequest(route, NoteOf(request), guarded.scope.key);
  ask.set(retry::kDeadlineHeader, retry::FormatDeadlineHeader(ctx.config.upstream_timeout));
  if (!route.fence_header.empty()) ask.set(route.fence_header, std::to_string(fence));
  const UpstreamAnswer answer =
      co_await ForwardBuffered(pool, std::move(ask), ctx.config.upstream_timeout);
  AnswerVerdict verdict = VerdictOnStatusAnswer(route, answer);
  switch (verdict.kind) {
    case AnswerVerdict::Kind::kNeverHappened:
      spdlog::info("key {}: taken over; its status URL says the effect never happened: sending it",
                   LoggedKey(guarded.scope.key));
      co_return std::nullopt;
    case AnswerVerdict::Kind::kCompleted:
    case AnswerVerdict::Kind::kFailedFinal:
    case AnswerVerdict::Kind::kNotKept:
      co_return co_await Record(ctx, guarded, fence, std::move(verdict));
    case AnswerVerdict::Kind::kTransient:
    case AnswerVerdict::Kind::kNotReached:
      break;
  }
  co_return co_await AskLater(ctx, guarded, fence, verdict.why);
}

}  // namespace idem::gateway
