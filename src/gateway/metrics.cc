#include "gateway/metrics.h"

#include <fmt/format.h>

namespace idem::gateway {

std::string_view DecisionName(Decision decision) {
  switch (decision) {
    case Decision::kExecuted:
      return "executed";
    case Decision::kReplayed:
      return "replayed";
    case Decision::kInFlight:
      return "in_flight_conflict";
    case Decision::kMismatch:
      return "mismatch";
    case Decision::kInvalid:
      return "invalid";
    case Decision::kTransient:
      return "transient";
    case Decision::kUpstreamError:
      return "upstream_error";
    case Decision::kStoreUnavailable:
      return "store_unavailable";
    case Decision::kPassThrough:
      return "pass_through";
    case Decision::kCount:
      break;
  }
  return "unknown";
}

void Histogram::Observe(std::chrono::steady_clock::duration took) {
  const double seconds = std::chrono::duration<double>(took).count();
  size_t i = 0;
  while (i < kBounds.size() && seconds > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_micros_.fetch_add(
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()),
      std::memory_order_relaxed);
}

void Histogram::Render(std::string_view name, std::string_view help, std::string& out) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cumulative);
  }
  cumulative += buckets_[kBounds.size()].load(std::memory_order_relaxed);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
  out += fmt::format("{}_sum {}\n", name,
                     static_cast<double>(sum_micros_.load(std::memory_order_relaxed)) / 1e6);
  out += fmt::format("{}_count {}\n", name, cumulative);
}

void SizeHistogram::Observe(uint64_t size) {
  size_t i = 0;
  while (i < kBounds.size() && size > kBounds[i]) ++i;
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(size, std::memory_order_relaxed);
  uint64_t seen = max_.load(std::memory_order_relaxed);
  while (size > seen && !max_.compare_exchange_weak(seen, size, std::memory_order_relaxed)) {
  }
}

void SizeHistogram::Render(std::string_view name, std::string_view help, std::string& out) const {
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < kBounds.size(); ++i) {
    cumulative += buckets_[i].load(std::memory_order_relaxed);
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, kBounds[i], cumulative);
  }
  cumulative += buckets_[kBounds.size()].load(std::memory_order_relaxed);
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, cumulative);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum(), name, cumulative);
}

std::string Metrics::Render() const {
  std::string out =
      "# HELP idem_requests_total Requests by what the gateway decided.\n"
      "# TYPE idem_requests_total counter\n";
  for (size_t i = 0; i < decisions_.size(); ++i) {
    out += fmt::format("idem_requests_total{{decision=\"{}\"}} {}\n",
                       DecisionName(static_cast<Decision>(i)),
                       decisions_[i].load(std::memory_order_relaxed));
  }
  request_seconds.Render("idem_request_duration_seconds",
                         "Time from a request's arrival to its answer.", out);
  upstream_seconds.Render("idem_upstream_duration_seconds", "Time of one upstream exchange.", out);
  store_seconds.Render("idem_store_duration_seconds", "Time of one key store operation.", out);
  out += fmt::format(
      "# HELP idem_keys_in_flight Keys this gateway holds (upstream calls running, outcomes "
      "pending).\n"
      "# TYPE idem_keys_in_flight gauge\nidem_keys_in_flight {}\n"
      "# HELP idem_open_connections Client connections open now.\n"
      "# TYPE idem_open_connections gauge\nidem_open_connections {}\n"
      "# HELP idem_heartbeats_total Lease extensions sent for keys in flight.\n"
      "# TYPE idem_heartbeats_total counter\nidem_heartbeats_total {}\n"
      "# HELP idem_swept_keys_total Expired key records deleted by the sweeper.\n"
      "# TYPE idem_swept_keys_total counter\nidem_swept_keys_total {}\n",
      keys_in_flight.load(), open_connections.load(), heartbeats.load(), swept.load());
  batch_sizes.Render("idem_store_batch_size",
                     "Key writes (claims, heartbeats, outcomes, releases) per group commit.", out);
  out += fmt::format(
      "# HELP idem_store_commits_total Group commits made (one transaction each).\n"
      "# TYPE idem_store_commits_total counter\nidem_store_commits_total {}\n"
      "# HELP idem_store_failed_commits_total Group commits the store refused; every write in "
      "them was answered 503.\n"
      "# TYPE idem_store_failed_commits_total counter\nidem_store_failed_commits_total {}\n"
      "# HELP idem_replay_cache_hits_total Replays answered from the in-memory cache.\n"
      "# TYPE idem_replay_cache_hits_total counter\nidem_replay_cache_hits_total {}\n"
      "# HELP idem_replay_cache_misses_total Cache lookups that found nothing.\n"
      "# TYPE idem_replay_cache_misses_total counter\nidem_replay_cache_misses_total {}\n"
      "# HELP idem_replay_cache_bytes Bytes the replay cache holds.\n"
      "# TYPE idem_replay_cache_bytes gauge\nidem_replay_cache_bytes {}\n",
      commits.load(), failed_commits.load(), cache_hits.load(), cache_misses.load(),
      cache_bytes.load());
  out += fmt::format(
      "# HELP idem_outcomes_pending Outcomes and releases the store did not take at once, kept "
      "while their writes are retried.\n"
      "# TYPE idem_outcomes_pending gauge\nidem_outcomes_pending {}\n"
      "# HELP idem_outcomes_pending_bytes Bytes of the outcomes pending.\n"
      "# TYPE idem_outcomes_pending_bytes gauge\nidem_outcomes_pending_bytes {}\n"
      "# HELP idem_max_pending_outcomes The bound on idem_outcomes_pending (max_pending_outcomes): "
      "at it new guarded requests get 503.\n"
      "# TYPE idem_max_pending_outcomes gauge\nidem_max_pending_outcomes {}\n"
      "# HELP idem_max_pending_bytes The bound on idem_outcomes_pending_bytes (max_pending_bytes): "
      "at it new guarded requests get 503.\n"
      "# TYPE idem_max_pending_bytes gauge\nidem_max_pending_bytes {}\n"
      "# HELP idem_outcome_record_retries_total Writes of pending outcomes retried.\n"
      "# TYPE idem_outcome_record_retries_total counter\nidem_outcome_record_retries_total {}\n"
      "# HELP idem_outcomes_abandoned_total Outcomes still unrecorded when the gateway exited.\n"
      "# TYPE idem_outcomes_abandoned_total counter\nidem_outcomes_abandoned_total {}\n",
      outcomes_pending.load(), pending_bytes.load(), max_pending_outcomes.load(),
      max_pending_bytes.load(), record_retries.load(), outcomes_abandoned.load());
  out += fmt::format(
      "# HELP idem_recovery_scans_total Lists of lapsed claims the completer read from the "
      "store.\n"
      "# TYPE idem_recovery_scans_total counter\nidem_recovery_scans_total {}\n"
      "# HELP idem_recovery_attempts_total Lapsed claims the completer took over and asked the "
      "upstream about.\n"
      "# TYPE idem_recovery_attempts_total counter\nidem_recovery_attempts_total {}\n"
      "# HELP idem_recovered_keys_total Lapsed claims the completer settled, by result.\n"
      "# TYPE idem_recovered_keys_total counter\n",
      recovery_scans.load(), recovery_attempts.load());
  static constexpr std::string_view kRecovered[] = {"completed", "failed_final", "released",
                                                    "exhausted"};
  for (size_t i = 0; i < recovered.size(); ++i)
    out += fmt::format("idem_recovered_keys_total{{result=\"{}\"}} {}\n", kRecovered[i],
                       recovered[i].load());
  out += fmt::format(
      "# HELP idem_answer_faults_total Answers lost or delayed on purpose (--allow-faults), their "
      "outcomes recorded first.\n"
      "# TYPE idem_answer_faults_total counter\n"
      "idem_answer_faults_total{{fault=\"lost\"}} {}\n"
      "idem_answer_faults_total{{fault=\"delayed\"}} {}\n",
      answers_lost.load(), answers_delayed.load());
  return out;
}

}  // namespace idem::gateway
