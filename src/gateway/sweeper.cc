#include "gateway/sweeper.h"

#include <spdlog/spdlog.h>

namespace idem::gateway {

Sweeper::Sweeper(Store& store, Metrics& metrics, Millis interval, int64_t batch)
    : store_(store), metrics_(metrics), interval_(interval), batch_(batch) {}

void Sweeper::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void Sweeper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Sweeper::Pause(Millis d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !wake_.wait_for(lock, d, [this] { return stopping_; });
}

void Sweeper::Run() {
  while (Pause(interval_)) {
    int64_t total = 0;
    for (;;) {
      absl::StatusOr<int64_t> deleted = store_.SweepExpired(batch_);
      if (!deleted.ok()) {
        spdlog::warn("sweeping expired keys failed: {}; trying again later",
                     deleted.status().ToString());
        break;
      }
      total += *deleted;
      metrics_.swept.fetch_add(static_cast<uint64_t>(*deleted), std::memory_order_relaxed);
      // A short pause between batches lets the requests' own writes in.
      if (*deleted < batch_ || !Pause(10ms)) break;
    }
    if (total > 0) spdlog::info("sweeper deleted {} expired key records", total);
  }
}

}  // namespace idem::gateway
