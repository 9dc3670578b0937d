#include "gateway/completer.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <utility>

#include "gateway/answer_verdict.h"
#include "gateway/guard_outcome.h"
#include "gateway/lapsed_key.h"
#include "gateway/log_format.h"
#include "gateway/problem_json.h"
#include "gateway/recovery_note.h"
#include "gateway/request_decision.h"
#include "idem/retry/deadline.h"
#include "idem/uuid.h"

namespace idem::gateway {
namespace {

using Metric = Metrics::Recovered;
constexpr int64_t kPage = 500;  // lapsed claims read per List call

// How long a key waits after its `attempts`-th attempt got a transient answer: exponential from
// the recover interval, capped at 32 intervals, with equal jitter.
Millis BackoffAfter(const GatewayConfig& config, int attempts, std::mt19937_64& rng) {
  const int64_t base = config.recover_interval.count();
  const int64_t ceiling = base << std::min(attempts - 1, 5);
  std::uniform_int_distribution<int64_t> half(0, ceiling / 2);
  return Millis(std::max<int64_t>(ceiling - ceiling / 2 + half(rng), 1));
}

// Writes `op` and logs a failure; the key's lease then lapses and a later pass tries again.
asio::awaitable<bool> Write(GatewayContext& ctx, KeyOp op, std::string_view what) {
  const std::string key = op.scope.key;
  KeyOpResult r = co_await AwaitKeyOp(ctx, std::move(op));
  if (!r.status.ok())
    spdlog::warn("recovery of key {}: {} was not written ({}); a later pass tries again",
                 LoggedKey(key), what, r.status.ToString());
  co_return r.status.ok();
}

class Completer {
 public:
  Completer(GatewayContext& ctx, UpstreamPool& pool, Store& store)
      : ctx_(ctx), pool_(pool), store_(store), rng_(std::random_device{}()) {}

  asio::awaitable<void> Run() {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;) {
      // Up to a tenth early or late, so that gateways started together do not scan together.
      const int64_t interval = ctx_.config.recover_interval.count();
      std::uniform_int_distribution<int64_t> spread(-interval / 10, interval / 10);
      timer.expires_after(Millis(std::max<int64_t>(interval + spread(rng_), 1)));
      auto [ec] = co_await timer.async_wait(kTuple);
      if (ec || ctx_.draining) co_return;
      co_await Pass();
    }
  }

 private:
  asio::awaitable<void> Pass() {
    // A gateway none of whose routes recovers (as of now: a reload swaps them) reads nothing.
    if (!AnyRouteRecovers(*ctx_.rules.load())) co_return;
    KeyQuery query{.limit = kPage, .lapsed = true};
    for (;;) {
      // A blocking read, on the completer's own thread.
      absl::StatusOr<std::vector<KeyRecord>> lapsed = store_.List(query);
      ctx_.metrics.recovery_scans.fetch_add(1, std::memory_order_relaxed);
      if (!lapsed.ok()) {
        spdlog::warn("completer: listing lapsed claims failed: {}", lapsed.status().ToString());
        co_return;
      }
      for (const KeyRecord& record : *lapsed) {
        if (ctx_.draining) co_return;
        std::optional<RecoveryNote> note = DecodeNote(record.response);
        if (!note.has_value()) continue;  // a route without recover, or an older idem's claim
        // The routes of now, for each key: a reload during a pass (a corrected status_url) takes
        // effect for the next key it touches. The snapshot lives until this key is settled.
        const std::shared_ptr<const GatewayConfig> rules = ctx_.rules.load();
        const Route* route = FindRoute(*rules, note->method, note->target);
        if (route == nullptr || route->recover == RecoverMode::kOff) continue;
        co_await Recover(*route, record, *std::move(note));
      }
      if (static_cast<int64_t>(lapsed->size()) < query.limit) co_return;
      query.after = lapsed->back().scope;
    }
  }

  // Takes `record`'s key over and asks the upstream once.
  asio::awaitable<void> Recover(const Route& route, const KeyRecord& record, RecoveryNote note) {
    ++note.attempts;
    KeyOp claim{.kind = KeyOp::Kind::kClaim,
                .scope = record.scope,
                .fingerprint = record.fingerprint,
                .owner = fmt::format("{}/recover-{}", ctx_.owner, NewUuidV7()),
                .lease = ctx_.config.lease,
                .response = EncodeNote(note)};
    KeyOpResult held = co_await AwaitKeyOp(ctx_, std::move(claim));
    if (!held.status.ok() || !held.claimed) co_return;  // another holder, or settled meanwhile
    const int64_t fence = held.record.fence;
    if (!held.taken_over) {
      // The key had gone (released, or expired) and this claim made it anew: nothing to recover.
      // GCC 12 miscompiles aggregate temporaries inside co_await expressions: named first.
      KeyOp release{.kind = KeyOp::Kind::kRelease, .scope = record.scope, .fence = fence};
      co_await Write(ctx_, std::move(release), "the release of a claim it made by mistake");
      co_return;
    }
    ctx_.metrics.recovery_attempts.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("recovering key {} (fence {}, attempt {} of {}, {})", LoggedKey(record.scope.key),
                 fence, note.attempts, ctx_.config.recover_attempts,
                 route.recover == RecoverMode::kResend ? "resend" : "status");
    AnswerVerdict verdict = co_await Ask(route, record.scope.key, note, fence);
    co_await Settle(record.scope, fence, note.attempts, std::move(verdict));
  }

  // Asks the upstream as the route's rule for a lapsed key says (ActionOnLapsedKey, the rule a
  // client's takeover follows too) and judges its answer as every path does (answer_verdict.h).
  asio::awaitable<AnswerVerdict> Ask(const Route& route, const std::string& key,
                                     const RecoveryNote& note, int64_t fence) {
    const bool resend = ActionOnLapsedKey(route) == LapsedKeyAction::kResend;
    http::request<http::string_body> request =
        resend ? RequestOf(note) : StatusRequest(route, note, key);
    request.set(retry::kDeadlineHeader, retry::FormatDeadlineHeader(ctx_.config.upstream_timeout));
    // The completer's own fence, over the one the stored request went with.
    if (!route.fence_header.empty()) request.set(route.fence_header, std::to_string(fence));
    UpstreamAnswer answer =
        co_await ForwardBuffered(pool_, std::move(request), ctx_.config.upstream_timeout);
    co_return resend ? VerdictOnAnswer(route, answer) : VerdictOnStatusAnswer(route, answer);
  }

  asio::awaitable<void> Settle(const Scope& scope, int64_t fence, int attempts,
                               AnswerVerdict verdict) {
    KeyOp op{.scope = scope, .fence = fence};
    switch (verdict.kind) {
      case AnswerVerdict::Kind::kNotKept:
        // The re-send ran (its answer's head arrived), or the status URL's 200 said the request
        // had but is too large to keep: never sent again, as on a client's forward.
        spdlog::warn("recovery of key {}: the upstream's answer could not be kept ({}); recording "
                     "a 502",
                     LoggedKey(scope.key), verdict.why);
        [[fallthrough]];
      case AnswerVerdict::Kind::kCompleted:
      case AnswerVerdict::Kind::kFailedFinal: {
        const bool done = verdict.kind == AnswerVerdict::Kind::kCompleted;
        op.kind = done ? KeyOp::Kind::kComplete : KeyOp::Kind::kFailFinal;
        op.response = std::move(verdict.stored);
        if (co_await Write(ctx_, std::move(op), "its outcome")) {
          spdlog::info("recovered key {}: recorded {}", LoggedKey(scope.key),
                       done ? "completed" : "failed");
          ctx_.metrics.CountRecovered(done ? Metric::kCompleted : Metric::kFailedFinal);
        }
        co_return;
      }
      case AnswerVerdict::Kind::kNeverHappened:
        op.kind = KeyOp::Kind::kRelease;
        if (co_await Write(ctx_, std::move(op), "its release")) {
          spdlog::info("recovered key {}: the effect never happened, key released",
                       LoggedKey(scope.key));
          ctx_.metrics.CountRecovered(Metric::kReleased);
        }
        co_return;
      case AnswerVerdict::Kind::kTransient:
      case AnswerVerdict::Kind::kNotReached:
        break;
    }
    if (attempts >= ctx_.config.recover_attempts) {
      op.kind = KeyOp::Kind::kFailFinal;
      op.response = RecoveryExhaustedResponse(fmt::format(
          "the gateway that took this request died before its answer was recorded, and {} "
          "recovery attempts got no definitive answer (the last: {}); the request may or may not "
          "have taken effect: check with the service before sending it again with a new key",
          attempts, verdict.why));
      if (co_await Write(ctx_, std::move(op), "its failed_final outcome")) {
        spdlog::warn("recovery of key {} gave up after {} attempts: {}", LoggedKey(scope.key),
                     attempts, verdict.why);
        ctx_.metrics.CountRecovered(Metric::kExhausted);
      }
      co_return;
    }
    // Held until the backoff ends: then the lease lapses and any gateway's pass tries again.
    const Millis wait = BackoffAfter(ctx_.config, attempts, rng_);
    spdlog::info("recovery of key {}: {}; asking again in about {} ms", LoggedKey(scope.key),
                 verdict.why, wait.count());
    op.kind = KeyOp::Kind::kHeartbeat;
    op.lease = wait;
    co_await Write(ctx_, std::move(op), "its backoff");
  }

  GatewayContext& ctx_;
  UpstreamPool& pool_;
  Store& store_;
  std::mt19937_64 rng_;
};

}  // namespace

bool AnyRouteRecovers(const GatewayConfig& config) {
  return std::any_of(config.routes.begin(), config.routes.end(),
                     [](const Route& r) { return r.recover != RecoverMode::kOff; });
}

asio::awaitable<void> RunCompleter(GatewayContext& ctx, UpstreamPool& pool, Store& store) {
  Completer completer(ctx, pool, store);
  co_await completer.Run();
}

StoredResponse RecoveryExhaustedResponse(std::string detail) {
  return ProblemResponse(
      Problem{.status = 502,
              .type = std::string(kProblemTypeBase) + "recovery-attempts-exhausted",
              .title = "Recovery attempts exhausted",
              .detail = std::move(detail)});
}

}  // namespace idem::gateway
