// Test support: a store whose acknowledgements get lost. A LostAckStore passes every call to a
// real store; when told to, it lets a lease batch (Store::ApplyLeaseBatch) apply and then answers
// Unavailable, "outcome unknown", as a store does when the connection drops during COMMIT or
// JetStream's acknowledgement times out after the write went through. It can also refuse batches
// without applying them (the store is down). Callers are then tested on what they make of a write
// whose outcome they do not know: they must resolve it by a retry that reads the record.
//
// Thread-safety: safe to use from many threads at once, as the real store.
#ifndef IDEM_STORE_TESTING_LOST_ACK_STORE_H_
#define IDEM_STORE_TESTING_LOST_ACK_STORE_H_

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "idem/store.h"

namespace idem::testing {

// REQUIRES: `real` outlives it.
class LostAckStore final : public Store {
 public:
  explicit LostAckStore(Store& real) : real_(real) {}

  // The next `count` batches that hold a write of `kind` are applied, then answered Unavailable.
  void LoseAcks(LeaseWrite::Kind kind, int count = 1) {
    std::lock_guard<std::mutex> lock(mu_);
    lose_[static_cast<int>(kind)] += count;
  }
  // The next `count` batches are answered Unavailable without reaching the real store.
  void RefuseBatches(int count) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_ += count;
  }
  // The next `count` batches that hold a write of `kind` are answered Unavailable without
  // reaching the real store.
  void RefuseBatchesWith(LeaseWrite::Kind kind, int count) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_kind_[static_cast<int>(kind)] += count;
  }
  // Forgets every fault still to come: the store is back.
  void Heal() {
    std::lock_guard<std::mutex> lock(mu_);
    std::fill(std::begin(lose_), std::end(lose_), 0);
    std::fill(std::begin(refuse_kind_), std::end(refuse_kind_), 0);
    refuse_ = 0;
  }
  int acks_lost() const {
    std::lock_guard<std::mutex> lock(mu_);
    return acks_lost_;
  }
  int batches_refused() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_refused_;
  }
  // Batches that reached the real store, whatever their answer.
  int batches_applied() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_applied_;
  }

  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    bool lose = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (refuse_ > 0 || Take(refuse_kind_, writes)) {
        if (refuse_ > 0) --refuse_;
        ++batches_refused_;
        return absl::UnavailableError("injected fault: the store is down; nothing was applied");
      }
      lose = Take(lose_, writes);
      ++batches_applied_;
    }
    absl::StatusOr<std::vector<LeaseWriteResult>> results = real_.ApplyLeaseBatch(writes);
    if (!lose || !results.ok()) return results;
    std::lock_guard<std::mutex> lock(mu_);
    ++acks_lost_;
    return absl::UnavailableError(fmt::format(
        "injected fault: the batch of {} write(s) was applied, but its acknowledgement was lost; "
        "its outcome is unknown",
        writes.size()));
  }

  absl::StatusOr<ClaimResult> Claim(const ClaimRequest& r) override { return real_.Claim(r); }
  absl::StatusOr<KeyRecord> TakeOver(const ClaimRequest& r, int64_t fence) override {
    return real_.TakeOver(r, fence);
  }
  absl::Status Heartbeat(const Scope& s, int64_t fence, Millis lease) override {
    return real_.Heartbeat(s, fence, lease);
  }
  absl::Status Complete(const Scope& s, int64_t fence, const StoredResponse& r) override {
    return real_.Complete(s, fence, r);
  }
  absl::Status FailFinal(const Scope& s, int64_t fence, const StoredResponse& r) override {
    return real_.FailFinal(s, fence, r);
  }
  absl::Status Release(const Scope& s, int64_t fence) override { return real_.Release(s, fence); }
  int64_t MaxResponseBytes() const override { return real_.MaxResponseBytes(); }
  absl::StatusOr<KeyRecord> Get(const Scope& s) override { return real_.Get(s); }
  absl::StatusOr<int64_t> SweepExpired(int64_t max_rows) override {
    return real_.SweepExpired(max_rows);
  }
  absl::StatusOr<std::vector<KeyRecord>> List(const KeyQuery& query) override {
    return real_.List(query);
  }
  absl::Status Purge(const Scope& scope) override { return real_.Purge(scope); }
  absl::StatusOr<std::unique_ptr<StoreTransaction>> Begin() override { return real_.Begin(); }

 private:
  // Takes one fault of `counts` (by kind) that a write of `writes` matches; false when none.
  static bool Take(int (&counts)[5], std::span<const LeaseWrite> writes) {
    for (const LeaseWrite& write : writes) {
      int& left = counts[static_cast<int>(write.kind)];
      if (left > 0) {
        --left;
        return true;
      }
    }
    return false;
  }

  Store& real_;
  mutable std::mutex mu_;
  int lose_[5] = {0, 0, 0, 0, 0};  // by LeaseWrite::Kind
  int refuse_kind_[5] = {0, 0, 0, 0, 0};
  int refuse_ = 0;
  int acks_lost_ = 0;
  int batches_refused_ = 0;
  int batches_applied_ = 0;
};

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_LOST_ACK_STORE_H_
