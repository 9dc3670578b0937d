#include "gateway/record_outcome.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <memory>
#include <utility>

#include "gateway/answer_verdict.h"
#include "gateway/guard_outcome.h"
#include "gateway/log_format.h"
#include "gateway/pending_outcome.h"
#include "gateway/problem_json.h"

namespace idem::gateway {
namespace {

constexpr int kNotRecordedRetryAfter = 1;  // seconds

void Forget(GatewayContext& ctx, uint64_t ticket) {
  ctx.in_flight.ForgetKey(ticket);
  ctx.metrics.keys_in_flight.fetch_sub(1, std::memory_order_relaxed);
}

using Plan = OutcomePlan;

// The upstream answer's verdict (VerdictOnAnswer, the rule the completer's re-send follows too)
// and the client's answer under it.
Plan PlanFor(const Route& route, const Scope& scope, UpstreamAnswer upstream) {
  AnswerVerdict verdict = VerdictOnAnswer(route, upstream);
  switch (verdict.kind) {
    case AnswerVerdict::Kind::kCompleted:
    case AnswerVerdict::Kind::kFailedFinal:
      return {.kind = verdict.kind == AnswerVerdict::Kind::kFailedFinal ? KeyOp::Kind::kFailFinal
                                                                        : KeyOp::Kind::kComplete,
              .stored = std::move(verdict.stored),
              .answer = {*std::move(upstream.response), Decision::kExecuted}};
    case AnswerVerdict::Kind::kTransient:
      // A transient head whose answer was then lost: the key is released, the client gets the
      // upstream's failure as a problem (504 too slow, 502 cut off), as with no answer at all.
      if (!upstream.response.ok()) break;
      return {.answer = {*std::move(upstream.response), Decision::kTransient}};
    case AnswerVerdict::Kind::kNotKept: {
      // Releasing the key would run the request again on the next retry: its failure is the
      // key's answer instead.
      spdlog::warn("key {}: the upstream's answer could not be kept ({}); recording a 502",
                   LoggedKey(scope.key), verdict.why);
      StoredResponse problem = verdict.stored;
      return {.kind = KeyOp::Kind::kFailFinal,
              .stored = std::move(verdict.stored),
              .answer = {std::move(problem), Decision::kUpstreamError}};
    }
    case AnswerVerdict::Kind::kNotReached:
    case AnswerVerdict::Kind::kNeverHappened:
      break;
  }
  return {.answer = {ProblemResponse(ProblemFor(upstream.response.status(), Origin::kUpstream)),
                     Decision::kUpstreamError}};
}

// The answer a store refused for ever (OutOfRange: larger than it keeps for one key): the 502
// upstream-answer-not-kept is the key's answer instead, as for any answer too large to keep.
Plan NotKeptInstead(const Scope& scope, const absl::Status& refusal) {
  spdlog::warn("key {}: the store refuses its outcome for ever ({}); recording a 502 instead",
               LoggedKey(scope.key), refusal.ToString());
  StoredResponse problem = RefusedOutcomeResponse();
  StoredResponse stored = problem;
  return {.kind = KeyOp::Kind::kFailFinal,
          .stored = std::move(stored),
          .answer = {std::move(problem), Decision::kUpstreamError}};
}

GuardedAnswer NotRecorded(std::string detail) {
  return {NotRecordedResponse(std::move(detail), kNotRecordedRetryAfter),
          Decision::kStoreUnavailable};
}

GuardedAnswer FenceMoved(const Scope& scope, int64_t fence) {
  spdlog::error(
      "key {}: its fence {} moved (another holder took it over after its lease lapsed); this "
      "gateway's outcome is not recorded and its client is told to retry",
      LoggedKey(scope.key), fence);
  return NotRecorded(
      "the request reached the upstream, but this gateway lost its hold on the idempotency key "
      "before its outcome was recorded; retry with the same key to get the key's recorded answer");
}

// The client's answer once a kept outcome settled (or its wait passed).
GuardedAnswer AfterWait(PendingOutcome::State state, GuardedAnswer answer, const Scope& scope,
                        int64_t fence, Millis waited) {
  switch (state) {
    case PendingOutcome::State::kRecorded:
      return answer;
    case PendingOutcome::State::kLost:
      return FenceMoved(scope, fence);
    case PendingOutcome::State::kRefused:  // nothing recorded; the answer could not be kept
      return {RefusedOutcomeResponse(), Decision::kUpstreamError};
    case PendingOutcome::State::kPending:
      break;
  }
  return NotRecorded(fmt::format(
      "the request reached the upstream, but the idempotency store has not recorded its outcome "
      "within {} ms; the gateway keeps retrying: retry with the same key to get the recorded "
      "answer",
      waited.count()));
}

}  // namespace

GuardedAnswer LostKeyAnswer(GatewayContext& ctx, const Scope& scope, uint64_t ticket,
                            int64_t fence) {
  Forget(ctx, ticket);
  return FenceMoved(scope, fence);
}

asio::awaitable<GuardedAnswer> RecordOutcome(GatewayContext& ctx, const Route& route,
                                             const GuardedRequest& guarded, uint64_t ticket,
                                             int64_t fence, UpstreamAnswer upstream) {
  // GCC 12 miscompiles aggregate temporaries inside co_await expressions: named first.
  Plan plan = PlanFor(route, guarded.scope, std::move(upstream));
  co_return co_await RecordPlannedOutcome(ctx, guarded, ticket, fence, std::move(plan));
}

asio::awaitable<GuardedAnswer> RecordPlannedOutcome(GatewayContext& ctx,
                                                    const GuardedRequest& guarded, uint64_t ticket,
                                                    int64_t fence, OutcomePlan plan) {
  const bool release = plan.kind == KeyOp::Kind::kRelease;
  ctx.in_flight.StopRenewing(ticket, release);
  const int64_t written_from = ctx.cache.NowMillis();
  KeyOp op{.kind = plan.kind, .scope = guarded.scope, .fence = fence};
  if (!release) op.response = std::move(plan.stored);
  KeyOpResult written = co_await AwaitKeyOp(ctx, std::move(op));
  if (!release) plan.stored = std::move(written.sent);  // handed back whatever the status
  // A permanent refusal is not a store fault: never retried, the smaller 502 written instead.
  if (!release && absl::IsOutOfRange(written.status)) {
    plan = NotKeptInstead(guarded.scope, written.status);
    KeyOp smaller{.kind = plan.kind, .scope = guarded.scope, .fence = fence};
    smaller.response = std::move(plan.stored);
    written = co_await AwaitKeyOp(ctx, std::move(smaller));
    plan.stored = std::move(written.sent);
    if (absl::IsOutOfRange(written.status)) {
      spdlog::error(
          "key {}: the store refuses even the 502 that stands for its answer ({}); nothing is "
          "recorded and the key is left to lapse",
          LoggedKey(guarded.scope.key), written.status.ToString());
      Forget(ctx, ticket);
      co_return std::move(plan.answer);
    }
  }
  if (written.status.ok()) {
    if (!release)
      ctx.cache.Put(guarded.scope, {guarded.fingerprint, std::move(plan.stored)},
                    written_from + ctx.config.retention.count());
    Forget(ctx, ticket);
    co_return std::move(plan.answer);
  }
  if (release && (absl::IsAborted(written.status) || absl::IsNotFound(written.status))) {
    spdlog::debug("key {} was no longer this holder's to release: {}", LoggedKey(guarded.scope.key),
                  written.status.ToString());
    Forget(ctx, ticket);
    co_return std::move(plan.answer);
  }
  if (absl::IsAborted(written.status)) {
    Forget(ctx, ticket);
    co_return FenceMoved(guarded.scope, fence);
  }
  spdlog::warn(
      "key {}: the store did not take its {} ({}); it is kept in memory and retried while the "
      "key stays held",
      LoggedKey(guarded.scope.key), release ? "release" : "outcome", written.status.ToString());
  KeyOp again{.kind = plan.kind, .scope = guarded.scope, .fence = fence};
  again.response = std::move(plan.stored);
  const asio::any_io_executor executor = co_await asio::this_coro::executor;
  std::shared_ptr<PendingOutcome> pending =
      KeepAndRetry(ctx, executor, std::move(again), ticket, guarded.fingerprint);
  // A transient answer is never recorded: its client need not wait for the release.
  if (release) co_return std::move(plan.answer);
  const auto start = std::chrono::steady_clock::now();
  const PendingOutcome::State state =
      co_await AwaitSettled(pending, start + ctx.config.record_wait);
  if (pending->written_instead.has_value())
    plan.answer = {*pending->written_instead, Decision::kUpstreamError};
  co_return AfterWait(state, std::move(plan.answer), guarded.scope, fence, ctx.config.record_wait);
}

}  // namespace idem::gateway
