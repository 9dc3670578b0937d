// The relay's loop: claim a batch, publish it in order per aggregate, record what became of each
// message, wait for more (docs/outbox.md, "idem relay").
//
// Per aggregate, messages go out one after another in seq order; the first that fails stops its
// aggregate for this batch (its followers wait, so order holds) while other aggregates go on.
// A failed message is due again after the retry toolkit's backoff with jitter, or after the
// endpoint's Retry-After; after max_attempts it is dead. Delivery is at least once: a relay that
// dies after publishing and before recording publishes again, under the same message id.
//
// On PostgreSQL, Run claims batch k+1 on a second thread (its own pooled connection) while
// batch k is published and recorded (RelayStore::claims_ahead), so the store's work on one
// overlaps the sink's on the other. That claim leaves k's messages out and may take k's leases
// over, so k+1 may hold later messages of k's aggregates. When k is recorded, k+1 is kept only if
// k attempted something and acknowledged every message of each aggregate k+1 has a message of;
// otherwise it is given back and the next batch claimed afresh (a batch that held an aggregate
// back while its predecessor's earlier messages waited in another batch could alternate with it
// for ever). A kept k+1 whose claim is older than a tenth of the lease (at most 1 s) has its
// leases renewed then, when its publishing starts. So no message goes out before every earlier
// one of its aggregate was acknowledged, and k is recorded before k+1 is published.
//
// Thread-safety: Run and RunOnce on one thread; RequestStop and Wake from any thread.
#ifndef IDEM_RELAY_RELAY_LOOP_H_
#define IDEM_RELAY_RELAY_LOOP_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "idem/clock.h"
#include "idem/retry/backoff.h"
#include "relay/relay_metrics.h"
#include "relay/relay_store.h"
#include "relay/sink.h"
#include "relay/wake_source.h"

namespace idem::relay {

struct RelayOptions {
  int64_t batch_size = 100;     // messages claimed at once. Default 100.
  Millis lease{30'000};         // PostgreSQL: how long a claim holds its aggregates.
  Millis send_timeout{10'000};  // the sink's per-message timeout (must be < lease)
  Millis poll_interval{1'000};  // wait after a claim that found nothing. Default 1 s.
  int max_attempts = 10;        // then the message is dead. Default 10.
  retry::BackoffOptions backoff{.jitter = retry::Jitter::kFull,
                                .base = Millis(1'000),
                                .cap = Millis(300'000)};  // default full jitter, 1 s to 5 min
  Millis max_retry_after{3'600'000};  // a longer Retry-After is cut to this. Default 1 h.
  bool let_dead_pass = false;         // a dead message holds back its aggregate. Default.
  Millis retention{86'400'000};       // sent messages are deleted after this. Default 24 h.
  Millis retention_every{60'000};     // how often the retention delete runs. Default 1 min.
  uint64_t seed = 0;                  // jitter's random seed; 0: from the OS
};

// Returns OK or InvalidArgument naming the option that is out of range.
absl::Status ValidateRelayOptions(const RelayOptions& options);

class Relay final {
 public:
  // REQUIRES: the arguments outlive the relay; ValidateRelayOptions(options).ok().
  Relay(RelayStore& store, Sink& sink, const Clock& clock, RelayOptions options,
        RelayMetrics& metrics);
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  struct Pass {
    int64_t attempted = 0;  // messages published (whatever became of them)
    bool gone = false;      // the sink said the endpoint is gone (HTTP 410)
    std::string gone_error;
  };
  // One claim, publish, record (no claim ahead). Errors: the store's (Unavailable), nothing
  // recorded.
  absl::StatusOr<Pass> RunOnce();

  // Runs passes until RequestStop (the pass under way is finished and recorded first; a batch
  // claimed ahead is given back unpublished), the sink says the endpoint is gone
  // (FailedPrecondition with the sink's words), or the store fails `max_store_failures` times in
  // a row (its error). Claims again at once after a pass that published anything; waits
  // poll_interval after a pass that attempted nothing (found nothing, or nothing it could send),
  // less when Wake() is called or the wake source fires (also for a wake that came during the
  // pass), or when a retry this relay recorded falls due first; a failing store is retried with
  // backoff.
  absl::Status Run(int max_store_failures = 30);

  void RequestStop();
  // Ends a wait between passes early (a NOTIFY arrived, say).
  void Wake();

  // Called while waiting between passes, in place of the plain timed wait, when set: it should
  // return within `wait` or once `stopping` returns true. Default: a timed wait that RequestStop
  // and Wake end early.
  void SetWaiter(std::function<void(Millis wait)> waiter) { waiter_ = std::move(waiter); }
  // Waits between passes on `source` (not owned; it must outlive Run) instead of a timed wait:
  // a PostgreSQL NOTIFY then starts the next pass within milliseconds. Wake and RequestStop
  // interrupt it. Call before Run.
  void SetWakeSource(WakeSource* source) { wake_source_ = source; }
  bool stopping() const { return stop_.load(); }

 private:
  // What a pass did so far.
  struct Progress {
    Pass pass;
    std::vector<Outcome> outcomes;
    std::set<std::string> stopped;  // aggregates whose earlier message failed in this batch
  };
  // Once a batch is published: what becomes of the batch claimed ahead of it, given what the
  // pass did and the batch's aggregates with a message not acknowledged (Run).
  using NextBatch =
      std::function<Successor(const Pass& pass, const std::set<std::string>& unacknowledged)>;
  absl::StatusOr<Batch> Claim(const Batch* unfinished);
  // Publishes `batch` and records it, with the batch claimed ahead of it when `next` is set
  // (RelayStore::Finish).
  absl::StatusOr<Pass> Deliver(const Batch& batch, const NextBatch& next);
  // Publishes the batch one message at a time, in seq order.
  void PublishInOrder(const Batch& batch, Progress& progress);
  // Publishes the batch in waves of distinct aggregates (Sink::concurrent()).
  void PublishWaves(const Batch& batch, Progress& progress);
  // Records what became of `message`.
  void Settle(const OutboxRecord& message, const Delivery& delivery, Progress& progress);
  Outcome Fail(const OutboxRecord& message, const Delivery& delivery, int64_t now_ms);
  void Wait(Millis wait);
  // The wait after a pass that attempted nothing: poll_interval, or less when a retry this relay
  // recorded falls due sooner (no notification announces it).
  Millis IdleWait(int64_t claimed_at_ms);
  // Counts pending messages every 5 s, deletes sent ones past retention every retention_every.
  absl::Status Housekeeping(int64_t now_ms);
  // Whether the batch claimed ahead (`next`) is published after a pass, and with its lease
  // renewed.
  Successor Decide(Batch& next, const Pass& pass, const std::set<std::string>& unacknowledged);

  RelayStore& store_;
  Sink& sink_;
  const Clock& clock_;
  RelayOptions options_;
  RelayMetrics& metrics_;
  std::mt19937_64 rng_;
  std::function<void(Millis)> waiter_;
  WakeSource* wake_source_ = nullptr;
  int64_t next_retention_ms_ = 0;
  int64_t next_count_ms_ = 0;
  std::multiset<int64_t> retries_due_ms_;  // when this relay's recorded retries fall due
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;  // guarded by mu_
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_RELAY_LOOP_H_
