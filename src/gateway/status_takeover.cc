#include "gateway/status_takeover.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "gateway/answer_verdict.h"
#include "gateway/guard_outcome.h"
#include "gateway/lapsed_key.h"
#include "gateway/log_format.h"
#include "gateway/record_outcome.h"
#include "gateway/recovery_note.h"
#include "idem/retry/deadline.h"

namespace idem::gateway {
namespace {

using Metric = Metrics::Recovered;

int CeilSeconds(Millis d) {
  return static_cast<int>(std::max<int64_t>((d.count() + 999) / 1000, 1));
}

// What the status URL's recordable verdict writes, and what the client gets once it is: the
// replay of what was recorded, or (kNotKept) the 502 upstream-answer-not-kept the live path
// answers for an answer too large to keep.
OutcomePlan PlanFor(const GuardedRequest& guarded, AnswerVerdict verdict) {
  if (verdict.kind == AnswerVerdict::Kind::kNotKept) {
    spdlog::warn("key {}: taken over; its status URL's answer could not be kept ({}); recording a "
                 "502",
                 LoggedKey(guarded.scope.key), verdict.why);
    StoredResponse problem = verdict.stored;
    return {.kind = KeyOp::Kind::kFailFinal,
            .stored = std::move(verdict.stored),
            .answer = {std::move(problem), Decision::kUpstreamError}};
  }
  const bool done = verdict.kind == AnswerVerdict::Kind::kCompleted;
  StoredResponse replay = ReplayResponse(verdict.stored);
  return {.kind = done ? KeyOp::Kind::kComplete : KeyOp::Kind::kFailFinal,
          .stored = std::move(verdict.stored),
          .answer = {std::move(replay), Decision::kReplayed}};
}

void Forget(GatewayContext& ctx, uint64_t ticket) {
  ctx.in_flight.ForgetKey(ticket);
  ctx.metrics.keys_in_flight.fetch_sub(1, std::memory_order_relaxed);
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
    int64_t fence, std::chrono::steady_clock::time_point* lease_end,
    const http::request<http::string_body>& request) {
  ctx.metrics.recovery_attempts.fetch_add(1, std::memory_order_relaxed);
  // Held as a forward's key is (the LeaseTicker heartbeats it) while the status URL is asked and
  // its answer recorded: a lease lapsing meanwhile let the next retry take the key over and abort
  // this holder's recording, again and again (the storm's sq-11-k118).
  const uint64_t ticket = ctx.in_flight.HoldKey(guarded.scope, fence, *lease_end);
  ctx.metrics.keys_in_flight.fetch_add(1, std::memory_order_relaxed);
  http::request<http::string_body> ask = StatusRequest(route, NoteOf(request), guarded.scope.key);
  ask.set(retry::kDeadlineHeader, retry::FormatDeadlineHeader(ctx.config.upstream_timeout));
  if (!route.fence_header.empty()) ask.set(route.fence_header, std::to_string(fence));
  const UpstreamAnswer answer =
      co_await ForwardBuffered(pool, std::move(ask), ctx.config.upstream_timeout);
  // Someone else holds the key now: nothing this holder writes would be taken.
  if (ctx.in_flight.Lost(ticket)) co_return LostKeyAnswer(ctx, guarded.scope, ticket, fence);
  AnswerVerdict verdict = VerdictOnStatusAnswer(route, answer);
  switch (verdict.kind) {
    case AnswerVerdict::Kind::kNeverHappened:
      spdlog::info("key {}: taken over; its status URL says the effect never happened: sending it",
                   LoggedKey(guarded.scope.key));
      // The forward holds the key under a ticket of its own, from the lease heartbeats renewed.
      *lease_end = std::max(*lease_end, ctx.in_flight.LeaseEnd(ticket).value_or(*lease_end));
      Forget(ctx, ticket);
      co_return std::nullopt;
    case AnswerVerdict::Kind::kCompleted:
    case AnswerVerdict::Kind::kFailedFinal:
    case AnswerVerdict::Kind::kNotKept: {
      const bool done = verdict.kind == AnswerVerdict::Kind::kCompleted;
      OutcomePlan plan = PlanFor(guarded, std::move(verdict));
      GuardedAnswer answer_of_key =
          co_await RecordPlannedOutcome(ctx, guarded, ticket, fence, std::move(plan));
      if (answer_of_key.decision == Decision::kReplayed ||
          answer_of_key.decision == Decision::kUpstreamError) {
        const bool completed = done && answer_of_key.decision == Decision::kReplayed;
        spdlog::info("key {}: taken over and settled by its status URL: recorded {}",
                     LoggedKey(guarded.scope.key), completed ? "completed" : "failed");
        ctx.metrics.CountRecovered(completed ? Metric::kCompleted : Metric::kFailedFinal);
      }
      co_return answer_of_key;
    }
    case AnswerVerdict::Kind::kTransient:
    case AnswerVerdict::Kind::kNotReached:
      break;
  }
  Forget(ctx, ticket);
  co_return co_await AskLater(ctx, guarded, fence, verdict.why);
}

}  // namespace idem::gateway
