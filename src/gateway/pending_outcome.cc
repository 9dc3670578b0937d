#include "gateway/pending_outcome.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "gateway/guard_outcome.h"
#include "gateway/log_format.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop

#include "idem/retry/backoff.h"

namespace idem::gateway {
namespace {

// Retries of a pending write: full jitter from 100 ms, capped at 1 s, so that a store coming
// back is noticed within about a second, and a thousand pending writes spread over that second.
constexpr retry::BackoffOptions kRecordBackoff{
    .jitter = retry::Jitter::kFull, .base = Millis(100), .cap = Millis(1000)};

int64_t BytesOf(const KeyOp& op) {
  int64_t bytes = static_cast<int64_t>(sizeof(KeyOp) + op.scope.tenant.size() +
                                       op.scope.key.size() + op.response.body.size());
  for (const Header& h : op.response.headers)
    bytes += static_cast<int64_t>(h.name.size() + h.value.size());
  return bytes;
}

const char* WhatIsWritten(KeyOp::Kind kind) {
  return kind == KeyOp::Kind::kRelease ? "release" : "outcome";
}

// What a retried write's result means: settled (and how), or still pending.
PendingOutcome::State Settles(const KeyOp& op, const absl::Status& status) {
  if (status.ok()) return PendingOutcome::State::kRecorded;
  if (op.kind == KeyOp::Kind::kRelease && (absl::IsAborted(status) || absl::IsNotFound(status)))
    return PendingOutcome::State::kRecorded;  // an earlier attempt went through, or it lapsed
  if (absl::IsAborted(status)) return PendingOutcome::State::kLost;
  if (absl::IsOutOfRange(status)) return PendingOutcome::State::kRefused;  // for ever
  return PendingOutcome::State::kPending;
}

void Settle(GatewayContext& ctx, PendingOutcome& pending, PendingOutcome::State state,
            uint64_t ticket, int64_t bytes) {
  pending.state = state;
  ctx.in_flight.ForgetKey(ticket);
  ctx.metrics.keys_in_flight.fetch_sub(1, std::memory_order_relaxed);
  ctx.metrics.outcomes_pending.fetch_sub(1, std::memory_order_relaxed);
  ctx.metrics.pending_bytes.fetch_sub(bytes, std::memory_order_relaxed);
  for (asio::steady_timer* waiter : pending.waiters) waiter->cancel();
}

asio::awaitable<void> Retry(GatewayContext& ctx, std::shared_ptr<PendingOutcome> pending, KeyOp op,
                            uint64_t ticket, std::string fingerprint, int64_t bytes) {
  retry::Backoff backoff =
      *retry::Backoff::Create(kRecordBackoff, ticket ^ static_cast<uint64_t>(bytes));
  asio::steady_timer timer(co_await asio::this_coro::executor);
  PendingOutcome::State state = PendingOutcome::State::kPending;
  absl::Status last;
  bool at_once = false;  // the 502 that replaces a refused outcome is written without a wait
  while (state == PendingOutcome::State::kPending) {
    if (!at_once) {
      timer.expires_after(backoff.NextDelay());
      co_await timer.async_wait(kTuple);
      ++pending->retries;
      ctx.metrics.record_retries.fetch_add(1, std::memory_order_relaxed);
    }
    at_once = false;
    const int64_t written_from = ctx.cache.NowMillis();
    KeyOp again = op;  // the op is kept whole for the next retry
    KeyOpResult result = co_await AwaitKeyOp(ctx, std::move(again));
    state = Settles(op, result.status);
    last = std::move(result.status);
    // A permanent refusal is not a store fault: the outcome is never retried, the smaller 502
    // upstream-answer-not-kept stands for it (once; a refusal of that too drops it).
    if (state == PendingOutcome::State::kRefused && op.kind != KeyOp::Kind::kRelease &&
        !pending->written_instead.has_value()) {
      spdlog::warn("key {}: the store refuses its outcome for ever ({}); recording a 502 instead",
                   LoggedKey(op.scope.key), last.ToString());
      op.kind = KeyOp::Kind::kFailFinal;
      op.response = RefusedOutcomeResponse();
      pending->written_instead = op.response;
      state = PendingOutcome::State::kPending;
      at_once = true;
      continue;
    }
    if (state == PendingOutcome::State::kRecorded && op.kind != KeyOp::Kind::kRelease)
      ctx.cache.Put(op.scope, {fingerprint, op.response},
                    written_from + ctx.config.retention.count());
    if (state == PendingOutcome::State::kPending && pending->retries % 20 == 0)
      spdlog::warn("key {}: its {} is still not recorded after {} retries: {}",
                   LoggedKey(op.scope.key), WhatIsWritten(op.kind), pending->retries,
                   last.ToString());
  }
  if (state == PendingOutcome::State::kRecorded) {
    spdlog::info("key {}: its {} was recorded after {} retries", LoggedKey(op.scope.key),
                 WhatIsWritten(op.kind), pending->retries);
  } else if (state == PendingOutcome::State::kRefused) {
    spdlog::error(
        "key {}: its {} was dropped: the store refuses it for ever ({}); the key is left to lapse",
        LoggedKey(op.scope.key), WhatIsWritten(op.kind), last.ToString());
  } else {
    spdlog::error(
        "key {}: its outcome was dropped: the fence {} moved ({}): another holder took the key "
        "over after its lease lapsed, and the key's answer is that holder's",
        LoggedKey(op.scope.key), op.fence, last.ToString());
  }
  Settle(ctx, *pending, state, ticket, bytes);
}

}  // namespace

std::shared_ptr<PendingOutcome> KeepAndRetry(GatewayContext& ctx,
                                             const asio::any_io_executor& executor, KeyOp op,
                                             uint64_t ticket, std::string fingerprint) {
  auto pending = std::make_shared<PendingOutcome>();
  const int64_t bytes = BytesOf(op);
  ctx.metrics.outcomes_pending.fetch_add(1, std::memory_order_relaxed);
  ctx.metrics.pending_bytes.fetch_add(bytes, std::memory_order_relaxed);
  ctx.in_flight.KeepPending(ticket, op.kind == KeyOp::Kind::kRelease);
  asio::co_spawn(executor,
                 Retry(ctx, pending, std::move(op), ticket, std::move(fingerprint), bytes),
                 asio::detached);
  return pending;
}

asio::awaitable<PendingOutcome::State> AwaitSettled(std::shared_ptr<PendingOutcome> pending,
                                                    std::chrono::steady_clock::time_point until) {
  if (pending->state != PendingOutcome::State::kPending) co_return pending->state;
  asio::steady_timer timer(co_await asio::this_coro::executor, until);
  pending->waiters.push_back(&timer);
  co_await timer.async_wait(kTuple);
  std::erase(pending->waiters, &timer);
  co_return pending->state;
}

bool RoomForOutcomes(const GatewayContext& ctx) {
  return ctx.metrics.outcomes_pending.load(std::memory_order_relaxed) <
             ctx.config.max_pending_outcomes &&
         ctx.metrics.pending_bytes.load(std::memory_order_relaxed) < ctx.config.max_pending_bytes;
}

}  // namespace idem::gateway
