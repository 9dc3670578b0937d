#include "relay/relay_loop.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>

namespace idem::relay {
namespace {

uint64_t SeedFromOs() {
  uint64_t seed = 0;
  if (getrandom(&seed, sizeof(seed), 0) != static_cast<ssize_t>(sizeof(seed))) seed = 42;
  return seed;
}

}  // namespace

absl::Status ValidateRelayOptions(const RelayOptions& o) {
  if (o.batch_size < 1 || o.batch_size > 10'000) {
    return absl::InvalidArgumentError(
        fmt::format("batch size {} is outside 1..10000", o.batch_size));
  }
  if (o.max_attempts < 1) return absl::InvalidArgumentError("max attempts must be 1 or more");
  if (o.send_timeout <= Millis(0) || o.send_timeout >= o.lease) {
    return absl::InvalidArgumentError(
        fmt::format("the send timeout ({} ms) must be positive and shorter than the lease ({} ms)",
                    o.send_timeout.count(), o.lease.count()));
  }
  if (o.poll_interval <= Millis(0)) {
    return absl::InvalidArgumentError("the poll interval must be positive");
  }
  if (o.retention < Millis(0)) return absl::InvalidArgumentError("retention must not be negative");
  return retry::ValidateBackoffOptions(o.backoff);
}

Relay::Relay(RelayStore& store, Sink& sink, const Clock& clock, RelayOptions options,
             RelayMetrics& metrics)
    : store_(store),
      sink_(sink),
      clock_(clock),
      options_(options),
      metrics_(metrics),
      rng_(options.seed != 0 ? options.seed : SeedFromOs()) {}

Outcome Relay::Fail(const OutboxRecord& message, const Delivery& delivery, int64_t now_ms) {
  Outcome outcome{.seq = message.seq, .error = delivery.error};
  if (delivery.kind == Delivery::Kind::kRejected || message.attempts + 1 >= options_.max_attempts) {
    outcome.kind = Outcome::Kind::kDead;
    metrics_.dead.fetch_add(1);
    return outcome;
  }
  outcome.kind = Outcome::Kind::kRetry;
  const int retry = static_cast<int>(std::min<int64_t>(message.attempts, 62));
  Millis wait = retry::ComputeDelay(options_.backoff, retry, options_.backoff.base, rng_);
  if (delivery.retry_after) wait = std::min(*delivery.retry_after, options_.max_retry_after);
  outcome.next_attempt_ms = now_ms + wait.count();
  metrics_.retried.fetch_add(1);
  return outcome;
}

void Relay::Settle(const OutboxRecord& message, const Delivery& delivery, Progress& progress) {
  const int64_t now = clock_.NowMillis();
  ++progress.pass.attempted;
  if (delivery.kind == Delivery::Kind::kDelivered) {
    progress.outcomes.push_back({.seq = message.seq, .kind = Outcome::Kind::kSent});
    metrics_.sent.fetch_add(1);
    metrics_.ObserveLatency(now - message.created_ms);
    return;
  }
  progress.stopped.insert(message.aggregate_key);
  if (delivery.kind == Delivery::Kind::kGone) {
    progress.pass.gone = true;
    progress.pass.gone_error = delivery.error;
    progress.outcomes.push_back({.seq = message.seq,
                                 .kind = Outcome::Kind::kRetry,
                                 .next_attempt_ms = now,
                                 .error = delivery.error});
    return;
  }
  progress.outcomes.push_back(Fail(message, delivery, now));
}

void Relay::PublishInOrder(const Batch& batch, Progress& progress) {
  for (const OutboxRecord& message : batch.messages) {
    if (progress.pass.gone || progress.stopped.contains(message.aggregate_key)) continue;
    // A message published after the lease lapsed could overtake another relay's.
    if (clock_.NowMillis() + options_.send_timeout.count() > batch.lease_until_ms) break;
    Settle(message, sink_.Publish(message), progress);
  }
}

void Relay::PublishWaves(const Batch& batch, Progress& progress) {
  // Wave k holds the k-th message of every aggregate: a message goes out only in a wave after
  // the one that acknowledged its predecessor.
  std::vector<std::vector<const OutboxRecord*>> waves;
  std::map<std::string_view, size_t> position;
  for (const OutboxRecord& message : batch.messages) {
    const size_t k = position[message.aggregate_key]++;
    if (k == waves.size()) waves.emplace_back();
    waves[k].push_back(&message);
  }
  for (std::vector<const OutboxRecord*>& wave : waves) {
    std::erase_if(
        wave, [&](const OutboxRecord* m) { return progress.stopped.contains(m->aggregate_key); });
    if (progress.pass.gone || wave.empty()) break;
    if (clock_.NowMillis() + options_.send_timeout.count() > batch.lease_until_ms) break;
    const std::vector<Delivery> deliveries = sink_.PublishEach(wave);
    for (size_t i = 0; i < wave.size() && i < deliveries.size(); ++i) {
      Settle(*wave[i], deliveries[i], progress);
    }
  }
}

absl::StatusOr<Batch> Relay::Claim(const Batch* unfinished) {
  return store_.Claim(clock_.NowMillis(), options_.batch_size, options_.lease.count(),
                      options_.let_dead_pass, unfinished);
}

absl::StatusOr<Relay::Pass> Relay::Deliver(const Batch& batch, const NextBatch& next) {
  Progress progress;
  if (sink_.concurrent()) {
    PublishWaves(batch, progress);
  } else {
    PublishInOrder(batch, progress);
  }
  std::function<Successor()> successor;
  std::set<std::string> unacknowledged;
  if (next) {
    std::set<int64_t> sent;
    for (const Outcome& outcome : progress.outcomes) {
      if (outcome.kind == Outcome::Kind::kSent) sent.insert(outcome.seq);
    }
    for (const OutboxRecord& message : batch.messages) {
      if (!sent.contains(message.seq)) unacknowledged.insert(message.aggregate_key);
    }
    successor = [&] { return next(progress.pass, unacknowledged); };
  }
  if (absl::Status done = store_.Finish(batch, progress.outcomes, clock_.NowMillis(), successor);
      !done.ok()) {
    return done;
  }
  for (const Outcome& outcome : progress.outcomes) {
    if (outcome.kind == Outcome::Kind::kRetry) retries_due_ms_.insert(outcome.next_attempt_ms);
  }
  return progress.pass;
}

absl::StatusOr<Relay::Pass> Relay::RunOnce() {
  absl::StatusOr<Batch> batch = Claim(nullptr);
  if (!batch.ok()) return batch.status();
  return Deliver(*batch, {});
}

absl::Status Relay::Housekeeping(int64_t now_ms) {
  if (now_ms >= next_count_ms_) {
    next_count_ms_ = now_ms + 5'000;
    absl::StatusOr<int64_t> pending = store_.CountPending();
    if (!pending.ok()) return pending.status();
    metrics_.pending.store(*pending);
  }
  if (now_ms < next_retention_ms_) return absl::OkStatus();
  next_retention_ms_ = now_ms + options_.retention_every.count();
  while (true) {
    absl::StatusOr<int64_t> deleted = store_.DeleteSent(now_ms - options_.retention.count(), 1000);
    if (!deleted.ok()) return deleted.status();
    if (*deleted < 1000) return absl::OkStatus();
  }
}

Successor Relay::Decide(Batch& next, const Pass& pass,
                        const std::set<std::string>& unacknowledged) {
  // Kept, the batch would hold back each aggregate the pass left unacknowledged, whose earlier
  // messages are not in it: given back, the next claim takes them in order.
  const bool keep =
      pass.attempted > 0 && !pass.gone && !stop_.load() && !next.messages.empty() &&
      std::none_of(next.messages.begin(), next.messages.end(),
                   [&](const OutboxRecord& m) { return unacknowledged.contains(m.aggregate_key); });
  if (!keep) return {.batch = &next, .keep = false};
  // Its publishing starts now: a claim that aged while the pass ran (a slow sink) would have
  // less than its lease left to publish in. A young one is not renewed: that would cost a write
  // of each of its leases per pass.
  const int64_t now = clock_.NowMillis();
  const int64_t young = std::min<int64_t>(options_.lease.count() / 10, 1'000);
  if (now - next.claimed_ms <= young) return {.batch = &next, .keep = true};
  return {.batch = &next, .keep = true, .renew_until_ms = now + options_.lease.count()};
}

absl::Status Relay::Run(int max_store_failures) {
  int failures = 0;
  absl::StatusOr<retry::Backoff> store_backoff =
      retry::Backoff::Create({.base = Millis(100), .cap = Millis(5'000)}, rng_());
  // The next batch, claimed while the current one is published (PostgreSQL).
  std::future<absl::StatusOr<Batch>> ahead;
  std::optional<absl::StatusOr<Batch>> ahead_claimed;  // once `ahead` is done
  bool ahead_kept = false;  // the current pass decided to publish it next (or it failed)
  auto await_ahead = [&] {
    if (ahead.valid()) ahead_claimed = ahead.get();
  };
  const NextBatch next = [&](const Pass& pass, const std::set<std::string>& unacknowledged) {
    await_ahead();
    if (!ahead_claimed) return Successor{};
    ahead_kept = true;  // a failed claim is the next pass's error
    if (!ahead_claimed->ok()) return Successor{};
    const Successor successor = Decide(**ahead_claimed, pass, unacknowledged);
    ahead_kept = successor.keep;
    return successor;
  };
  // Gives a batch claimed ahead back unpublished: its leases, some taken over from the batch
  // before it, are released at once rather than left to lapse. A failure here changes nothing:
  // they lapse.
  auto give_back_ahead = [&] {
    await_ahead();
    if (ahead_claimed && ahead_claimed->ok()) {
      (void)store_.Finish(**ahead_claimed, {}, clock_.NowMillis());
    }
    ahead_claimed.reset();
  };
  while (!stop_.load()) {
    await_ahead();
    absl::StatusOr<Batch> claimed = ahead_claimed ? *std::move(ahead_claimed) : Claim(nullptr);
    ahead_claimed.reset();
    ahead_kept = false;
    int64_t claimed_at_ms = 0;
    absl::StatusOr<Pass> pass = absl::UnknownError("not claimed");
    if (!claimed.ok()) {
      pass = claimed.status();
    } else {
      claimed_at_ms = claimed->claimed_ms;
      // Shared with the claim ahead, which reads its token and seqs while it is published.
      auto batch = std::make_shared<const Batch>(*std::move(claimed));
      const bool claim_ahead = store_.claims_ahead() && !batch->messages.empty() && !stop_.load();
      if (claim_ahead) {
        ahead = std::async(std::launch::async, [this, batch] { return Claim(batch.get()); });
      }
      pass = Deliver(*batch, claim_ahead ? next : NextBatch());
    }
    if (pass.ok()) {
      if (!ahead_kept) ahead_claimed.reset();  // given back when the pass was recorded
      if (absl::Status kept = Housekeeping(clock_.NowMillis()); !kept.ok()) pass = kept;
    }
    if (!pass.ok()) {
      give_back_ahead();
      metrics_.store_errors.fetch_add(1);
      if (++failures >= max_store_failures) return pass.status();
      Wait(store_backoff->NextDelay());
      continue;
    }
    failures = 0;
    store_backoff->Reset();
    if (pass->gone) {
      give_back_ahead();
      return absl::FailedPreconditionError(fmt::format(
          "the endpoint is gone (it answered 410): {}; delivery to it stopped, its messages stay "
          "pending",
          pass->gone_error));
    }
    if (pass->attempted == 0) Wait(IdleWait(claimed_at_ms));
  }
  give_back_ahead();
  return absl::OkStatus();
}

Millis Relay::IdleWait(int64_t claimed_at_ms) {
  // A claim that started at or after a retry's time found it due (or it was sent, re-driven or
  // purged since): it needs no wake of its own any more.
  retries_due_ms_.erase(retries_due_ms_.begin(), retries_due_ms_.upper_bound(claimed_at_ms));
  if (retries_due_ms_.empty()) return options_.poll_interval;
  const int64_t until_due = std::max<int64_t>(0, *retries_due_ms_.begin() - clock_.NowMillis());
  return std::min(options_.poll_interval, Millis(until_due));
}

void Relay::RequestStop() {
  stop_.store(true);
  Wake();
}

void Relay::Wake() {
  if (wake_source_ != nullptr) wake_source_->Interrupt();
  std::lock_guard<std::mutex> lock(mu_);
  woken_ = true;
  cv_.notify_all();
}

void Relay::Wait(Millis wait) {
  if (waiter_) return waiter_(wait);
  metrics_.waiting.store(1);
  if (wake_source_ != nullptr) {
    if (!stop_.load()) wake_source_->Wait(wait);
  } else {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, wait, [&] { return woken_ || stop_.load(); });
    woken_ = false;
  }
  metrics_.waiting.store(0);
}

}  // namespace idem::relay
