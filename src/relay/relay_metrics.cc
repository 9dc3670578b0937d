#include "relay/relay_metrics.h"

#include <fmt/format.h>

namespace idem::relay {

void RelayMetrics::ObserveLatency(int64_t ms) {
  if (ms < 0) ms = 0;
  size_t i = 0;
  while (i < kBucketsMs.size() && ms > kBucketsMs[i]) ++i;
  latency_buckets[i].fetch_add(1);
  latency_sum_ms.fetch_add(ms);
}

std::string RelayMetrics::Render() const {
  std::string out;
  auto counter = [&](const char* name, const char* help, int64_t value, const char* type) {
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
  };
  counter("idem_relay_sent_total", "Messages acknowledged by the sink.", sent.load(), "counter");
  counter("idem_relay_retried_total", "Failed attempts that will be retried.", retried.load(),
          "counter");
  counter("idem_relay_dead_total", "Messages that ran out of attempts.", dead.load(), "counter");
  counter("idem_relay_store_errors_total", "Claims or records the store refused.",
          store_errors.load(), "counter");
  counter("idem_relay_pending", "Pending messages in the outbox, last counted.", pending.load(),
          "gauge");
  counter("idem_relay_waiting",
          "1 while the relay waits between passes (nothing due, or backing off from the store).",
          waiting.load(), "gauge");
  out +=
      "# HELP idem_relay_delivery_latency_seconds From the message's creation to its "
      "acknowledgement.\n# TYPE idem_relay_delivery_latency_seconds histogram\n";
  int64_t cumulative = 0;
  for (size_t i = 0; i < kBucketsMs.size(); ++i) {
    cumulative += latency_buckets[i].load();
    out += fmt::format("idem_relay_delivery_latency_seconds_bucket{{le=\"{}\"}} {}\n",
                       static_cast<double>(kBucketsMs[i]) / 1000.0, cumulative);
  }
  cumulative += latency_buckets.back().load();
  out += fmt::format("idem_relay_delivery_latency_seconds_bucket{{le=\"+Inf\"}} {}\n", cumulative);
  out += fmt::format("idem_relay_delivery_latency_seconds_sum {}\n",
                     static_cast<double>(latency_sum_ms.load()) / 1000.0);
  out += fmt::format("idem_relay_delivery_latency_seconds_count {}\n", cumulative);
  return out;
}

}  // namespace idem::relay
