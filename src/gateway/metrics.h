// Internal: the counters and histograms `idem serve` exposes on its admin listener at /metrics,
// in the Prometheus text exposition format (docs/gateway.md "Metrics" lists them).
//
// Thread-safety: every member may be updated from any thread at once (relaxed atomics); Render
// reads a snapshot that may mix updates in progress.
#ifndef IDEM_GATEWAY_METRICS_H_
#define IDEM_GATEWAY_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace idem::gateway {

// What the gateway did with a request; one counter each.
enum class Decision {
  kExecuted,          // guarded, forwarded, outcome stored
  kReplayed,          // answered from the stored outcome
  kInFlight,          // 409: the key is held by a request still running
  kMismatch,          // 422: the key was used with another request
  kInvalid,           // 400/408/413: the request itself was refused
  kTransient,         // guarded, forwarded, outcome transient: not stored, key released
  kUpstreamError,     // guarded, upstream unreachable, too slow or garbled: 502/504
  kStoreUnavailable,  // 503: the store could not be reached; nothing forwarded
  kPassThrough,       // not guarded: relayed untouched
  kCount,
};

std::string_view DecisionName(Decision decision);

// A histogram of durations in seconds with fixed buckets from 0.5 ms to 10 s.
class Histogram final {
 public:
  static constexpr std::array<double, 12> kBounds = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                                     0.05,   0.1,   0.25,   0.5,   1,    10};
  void Observe(std::chrono::steady_clock::duration took);
  // Appends the histogram's lines (_bucket, _sum, _count) for metric `name`.
  void Render(std::string_view name, std::string_view help, std::string& out) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};  // last: +Inf only
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_micros_{0};
};

// A histogram of counts (a group commit's batch size) with buckets at powers of two up to 256.
class SizeHistogram final {
 public:
  static constexpr std::array<uint64_t, 9> kBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  void Observe(uint64_t size);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  uint64_t sum() const { return sum_.load(std::memory_order_relaxed); }
  // The largest size observed.
  uint64_t max() const { return max_.load(std::memory_order_relaxed); }
  void Render(std::string_view name, std::string_view help, std::string& out) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};  // last: +Inf only
  std::atomic<uint64_t> count_{0};
  std::atomic<uint64_t> sum_{0};
  std::atomic<uint64_t> max_{0};
};

class Metrics final {
 public:
  void Count(Decision decision) {
    decisions_[static_cast<size_t>(decision)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t count(Decision decision) const {
    return decisions_[static_cast<size_t>(decision)].load(std::memory_order_relaxed);
  }

  Histogram request_seconds;   // a whole request, first header byte read to answer written
  Histogram upstream_seconds;  // one upstream exchange
  Histogram store_seconds;     // one key-store operation, submitted to result
  std::atomic<int64_t> keys_in_flight{0};
  std::atomic<int64_t> open_connections{0};
  std::atomic<uint64_t> heartbeats{0};
  std::atomic<uint64_t> swept{0};
  // The key service's group commit: writes per batch, batches committed, batches failed.
  SizeHistogram batch_sizes;
  std::atomic<uint64_t> commits{0};
  std::atomic<uint64_t> failed_commits{0};
  // The replay cache: lookups answered from it, lookups that missed, bytes it holds now.
  std::atomic<uint64_t> cache_hits{0};
  std::atomic<uint64_t> cache_misses{0};
  std::atomic<int64_t> cache_bytes{0};
  // Outcomes (and releases) the store did not take at once, kept while their writes are retried:
  // how many and how many bytes now, retries made, and outcomes still unrecorded at exit.
  std::atomic<int64_t> outcomes_pending{0};
  std::atomic<int64_t> pending_bytes{0};
  std::atomic<uint64_t> record_retries{0};
  std::atomic<uint64_t> outcomes_abandoned{0};
  // The configured bounds on those (max_pending_outcomes, max_pending_bytes), rendered beside
  // them: new guarded requests are refused with 503 while either count is at its bound, so an
  // alert compares the two series without copying the config into its rule. Set at start.
  std::atomic<int64_t> max_pending_outcomes{0};
  std::atomic<int64_t> max_pending_bytes{0};
  // The completer (completer.h): lists of lapsed claims read from the store, recovery attempts
  // made (takeovers that asked the upstream), and keys it settled, by how.
  enum class Recovered { kCompleted, kFailedFinal, kReleased, kExhausted, kCount };
  std::atomic<uint64_t> recovery_scans{0};
  std::atomic<uint64_t> recovery_attempts{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Recovered::kCount)> recovered{};
  void CountRecovered(Recovered how) {
    recovered[static_cast<size_t>(how)].fetch_add(1, std::memory_order_relaxed);
  }
  // Faults for testing clients (answer_faults.h): answers lost on purpose (the connection closed
  // unanswered after the outcome was recorded) and answers delayed on purpose.
  std::atomic<uint64_t> answers_lost{0};
  std::atomic<uint64_t> answers_delayed{0};

  // Returns every metric in the Prometheus text format.
  std::string Render() const;

 private:
  std::array<std::atomic<uint64_t>, static_cast<size_t>(Decision::kCount)> decisions_{};
};

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_METRICS_H_
