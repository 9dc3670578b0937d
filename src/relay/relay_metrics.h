// The relay's counters, for `idem relay --admin ADDR` (/metrics, Prometheus text format).
//
// Thread-safety: every member is atomic; Render may run beside the relay's updates.
#ifndef IDEM_RELAY_RELAY_METRICS_H_
#define IDEM_RELAY_RELAY_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

namespace idem::relay {

struct RelayMetrics {
  std::atomic<int64_t> sent{0};
  std::atomic<int64_t> retried{0};
  std::atomic<int64_t> dead{0};
  std::atomic<int64_t> pending{-1};  // last counted; -1 until counted
  std::atomic<int64_t> store_errors{0};
  std::atomic<int64_t> waiting{0};  // 1 while the relay waits between passes
  // Delivery latency from the message's creation (its transaction's time) to its acknowledgement.
  static constexpr std::array<int64_t, 12> kBucketsMs = {1,   5,    10,   25,    50,    100,
                                                         250, 1000, 5000, 30000, 60000, 300000};
  std::array<std::atomic<int64_t>, kBucketsMs.size() + 1> latency_buckets{};  // last is +Inf
  std::atomic<int64_t> latency_sum_ms{0};

  void ObserveLatency(int64_t ms);
  // The Prometheus text exposition of every metric.
  std::string Render() const;
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_RELAY_METRICS_H_
