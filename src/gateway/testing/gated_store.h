// Test support: a Store that holds every lease batch at its door until Open(), then applies it,
// or fails it (Unavailable) when Open() said to fail every batch or when it holds the key
// `poison`. Remembers the keys of every failed batch.
#ifndef IDEM_GATEWAY_TESTING_GATED_STORE_H_
#define IDEM_GATEWAY_TESTING_GATED_STORE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "gateway/testing/forwarding_store.h"

namespace idem::gateway::testing {

class GatedStore final : public ForwardingStore {
 public:
  explicit GatedStore(Store& real, std::string poison = "")
      : ForwardingStore(real), poison_(std::move(poison)) {}

  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    std::unique_lock<std::mutex> lock(mu_);
    ++held_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --held_;
    bool fail = fail_every_batch_;
    for (const LeaseWrite& w : writes) fail = fail || (!poison_.empty() && w.scope.key == poison_);
    if (fail) {
      for (const LeaseWrite& w : writes) failed_keys_.insert(w.scope.key);
      return absl::UnavailableError("the store is down");
    }
    lock.unlock();
    return real_.ApplyLeaseBatch(writes);
  }

  // Waits (at most 10 s) until `n` batches are held at the door at once; returns whether they were.
  bool WaitHeld(int n = 1) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_ >= n; });
  }

  // Lets every batch through, held or still to come: applied, or all failed when
  // `fail_every_batch`.
  void Open(bool fail_every_batch = false) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    fail_every_batch_ = fail_every_batch;
    cv_.notify_all();
  }

  std::set<std::string> failed_keys() {
    std::lock_guard<std::mutex> lock(mu_);
    return failed_keys_;
  }

 private:
  const std::string poison_;
  std::mutex mu_;
  std::condition_variable cv_;
  int held_ = 0;
  bool open_ = false;
  bool fail_every_batch_ = false;
  std::set<std::string> failed_keys_;
};

}  // namespace idem::gateway::testing

#endif  // IDEM_GATEWAY_TESTING_GATED_STORE_H_
