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

absl::StatusOr<Relay::Pass> Relay::Deliver(
    const Batch& batch, std::set<std::string> held_back, std::set<std::string>* unacknowledged,
    const std::function<std::vector<std::string>()>& taken_over) {
  Progress progress{.stopped = std::move(held_back)};
  if (sink_.concurrent()) {
    PublishWaves(batch, progress);
  } else {
    PublishInOrder(batch, progress);
  }
  if (absl::Status done = store_.Finish(batch, progress.outcomes, clock_.NowMillis(), taken_over);
      !done.ok()) {
    return done;
  }
  for (const Outcome& outcome : progress.outcomes) {
    if (outcome.kind == Outcome::Kind::kRetry) retries_due_ms_.insert(outcome.next_attempt_ms);
  }
  if (unacknowledged != nullptr) {
    std::set<int64_t> sent;
    for (const Outcome& outcome : progress.outcomes) {
      if (outcome.kind == Outcome::Kind::kSent) sent.insert(outcome.seq);
    }
    for (const OutboxRecord& message : batch.messages) {
      if (!sent.contains(message.seq)) unacknowledged->insert(message.aggregate_key);
    }
  }
  return progress.pass;
}

absl::StatusOr<Relay::Pass> Relay::RunOnce() {
  absl::StatusOr<Batch> batch = Claim(nullptr);
  if (!batch.ok()) return batch.status();
  return Deliver(*batch, {}, nullptr, {});
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

absl::Status Relay::Run(int max_store_failures) {
  int failures = 0;
  absl::StatusOr<retry::Backoff> store_backoff =
      retry::Backoff::Create({.base = Millis(100), .cap = Millis(5'000)}, rng_());
  // The next batch, claimed while the current one is published (PostgreSQL), and the aggregates
  // of the current one that it must hold back.
  std::future<absl::StatusOr<Batch>> ahead;
  std::optional<absl::StatusOr<Batch>> ahead_claimed;  // once `ahead` is done
  std::set<std::string> unacknowledged;
  auto await_ahead = [&] {
    if (ahead.valid()) ahead_claimed = ahead.get();
  };
  // The aggregates the claim ahead took over (Finish leaves their leases alone).
  auto taken_over = [&] {
    await_ahead();
    return ahead_claimed && ahead_claimed->ok() ? (*ahead_claimed)->leased
                                                : std::vector<std::string>{};
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
    const bool claimed_ahead = ahead_claimed.has_value();
    const int64_t claimed_at_ms = clock_.NowMillis();
    absl::StatusOr<Batch> claimed = claimed_ahead ? *std::move(ahead_claimed) : Claim(nullptr);
    ahead_claimed.reset();
    absl::StatusOr<Pass> pass = absl::UnknownError("not claimed");
    if (!claimed.ok()) {
      pass = claimed.status();
    } else {
      // Shared with the claim ahead, which reads its token and seqs while it is published.
      auto batch = std::make_shared<const Batch>(*std::move(claimed));
      std::set<std::string> held_back;
      if (claimed_ahead) held_back.swap(unacknowledged);
      unacknowledged.clear();
      if (store_.claims_ahead() && !batch->messages.empty() && !stop_.load()) {
        ahead = std::async(std::launch::async, [this, batch] { return Claim(batch.get()); });
      }
      pass = Deliver(*batch, std::move(held_back), &unacknowledged, taken_over);
    }
    if (pass.ok()) {
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
    // A batch claimed ahead that had nothing to send says nothing of the outbox: the batch before
    // it still held messages then. Claim again at once.
    if (pass->attempted == 0 && !claimed_ahead) Wait(IdleWait(claimed_at_ms));
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
