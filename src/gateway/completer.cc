#include "gateway/completer.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#pragma GCC diagnostic pop
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <random>
#include <utility>

#include "gateway/guard_outcome.h"
#include "gateway/log_format.h"
#include "gateway/problem_json.h"
#include "gateway/recovery_note.h"
#include "gateway/request_decision.h"
#include "idem/retry/deadline.h"
#include "idem/uuid.h"

namespace idem::gateway {
namespace {

using Metric = Metrics::Recovered;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr int64_t kPage = 500;  // lapsed claims read per List call

// What one attempt learnt from the upstream.
struct Verdict {
  enum class Kind { kComplete, kFailFinal, kRelease, kLater };
  Kind kind = Kind::kLater;
  StoredResponse stored;  // kComplete, kFailFinal
  std::string why;        // kLater: what the attempt got, for the log and the final problem
};

// The request that asks a `status` route's upstream whether the effect of `key` happened.
http::request<http::string_body> StatusRequest(const Route& route, const RecoveryNote& note,
                                               const std::string& key) {
  std::string target = route.status_url;
  const std::string encoded = PercentEncode(key);
  for (size_t at = target.find("{key}"); at != std::string::npos;
       at = target.find("{key}", at + encoded.size()))
    target.replace(at, 5, encoded);
  http::request<http::string_body> request{http::verb::get, target, 11};
  // The original request's credentials and other fields go along; its body's do not.
  for (const Header& h : note.headers) {
    if (beast::iequals(h.name, "Content-Length") || beast::iequals(h.name, "Content-Type") ||
        beast::iequals(h.name, "Content-Encoding") || beast::iequals(h.name, "Idempotency-Key"))
      continue;
    request.insert(h.name, h.value);
  }
  request.set("Idempotency-Key", FormatKeyHeader(key));
  return request;
}

Verdict ResendVerdict(const Route& route, UpstreamAnswer answer) {
  if (!answer.response.ok()) return {.why = answer.response.status().ToString()};
  const int status = answer.response->status;
  switch (ClassifyOutcome(route, status)) {
    case OutcomeClass::kCompleted:
      return {.kind = Verdict::Kind::kComplete, .stored = ToStored(*answer.response, route)};
    case OutcomeClass::kFailedFinal:
      return {.kind = Verdict::Kind::kFailFinal, .stored = ToStored(*answer.response, route)};
    case OutcomeClass::kTransient:
      break;
  }
  return {.why = fmt::format("the upstream answered {}, a transient status", status)};
}

Verdict StatusVerdict(const Route& route, UpstreamAnswer answer) {
  if (!answer.response.ok()) return {.why = answer.response.status().ToString()};
  const int status = answer.response->status;
  if (status == 404) return {.kind = Verdict::Kind::kRelease};
  if (status != 200)
    return {.why = fmt::format("the status URL answered {}; only 200 or 404 settle a key", status)};
  Verdict verdict{.kind = Verdict::Kind::kComplete, .stored = ToStored(*answer.response, route)};
  if (route.recovered_status != 0) verdict.stored.status = route.recovered_status;
  return verdict;
}

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
    // The routes of now (a reload swaps them); a gateway with none that recovers reads nothing.
    const std::shared_ptr<const GatewayConfig> rules = ctx_.rules.load();
    if (!AnyRouteRecovers(*rules)) co_return;
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
    Verdict verdict = co_await Ask(route, record.scope.key, note, fence);
    co_await Settle(record.scope, fence, note.attempts, std::move(verdict));
  }

  asio::awaitable<Verdict> Ask(const Route& route, const std::string& key, const RecoveryNote& note,
                               int64_t fence) {
    http::request<http::string_body> request =
        route.recover == RecoverMode::kResend ? RequestOf(note) : StatusRequest(route, note, key);
    request.set(retry::kDeadlineHeader, retry::FormatDeadlineHeader(ctx_.config.upstream_timeout));
    // The completer's own fence, over the one the stored request went with.
    if (!route.fence_header.empty()) request.set(route.fence_header, std::to_string(fence));
    UpstreamAnswer answer =
        co_await ForwardBuffered(pool_, std::move(request), ctx_.config.upstream_timeout);
    co_return route.recover == RecoverMode::kResend ? ResendVerdict(route, std::move(answer))
                                                    : StatusVerdict(route, std::move(answer));
  }

  asio::awaitable<void> Settle(const Scope& scope, int64_t fence, int attempts, Verdict verdict) {
    KeyOp op{.scope = scope, .fence = fence};
    switch (verdict.kind) {
      case Verdict::Kind::kComplete:
      case Verdict::Kind::kFailFinal: {
        const bool done = verdict.kind == Verdict::Kind::kComplete;
        op.kind = done ? KeyOp::Kind::kComplete : KeyOp::Kind::kFailFinal;
        op.response = std::move(verdict.stored);
        if (co_await Write(ctx_, std::move(op), "its outcome")) {
          spdlog::info("recovered key {}: recorded {}", LoggedKey(scope.key),
                       done ? "completed" : "failed");
          ctx_.metrics.CountRecovered(done ? Metric::kCompleted : Metric::kFailedFinal);
        }
        co_return;
      }
      case Verdict::Kind::kRelease:
        op.kind = KeyOp::Kind::kRelease;
        if (co_await Write(ctx_, std::move(op), "its release")) {
          spdlog::info("recovered key {}: the effect never happened, key released",
                       LoggedKey(scope.key));
          ctx_.metrics.CountRecovered(Metric::kReleased);
        }
        co_return;
      case Verdict::Kind::kLater:
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

std::string PercentEncode(std::string_view key) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(key.size());
  for (const unsigned char c : key) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

StoredResponse RecoveryExhaustedResponse(std::string detail) {
  return ProblemResponse(
      Problem{.status = 502,
              .type = std::string(kProblemTypeBase) + "recovery-attempts-exhausted",
              .title = "Recovery attempts exhausted",
              .detail = std::move(detail)});
}

}  // namespace idem::gateway
