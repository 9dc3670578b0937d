// Test support: a Store that passes every call to another one; tests override the calls they
// want to watch, hold up or fail.
#ifndef IDEM_GATEWAY_TESTING_FORWARDING_STORE_H_
#define IDEM_GATEWAY_TESTING_FORWARDING_STORE_H_

#include <memory>
#include <vector>

#include "idem/store.h"

namespace idem::gateway::testing {

class ForwardingStore : public Store {
 public:
  explicit ForwardingStore(Store& real) : real_(real) {}

  absl::StatusOr<ClaimResult> Claim(const ClaimRequest& request) override {
    return real_.Claim(request);
  }
  absl::StatusOr<KeyRecord> TakeOver(const ClaimRequest& request, int64_t fence) override {
    return real_.TakeOver(request, fence);
  }
  absl::Status Heartbeat(const Scope& scope, int64_t fence, Millis lease) override {
    return real_.Heartbeat(scope, fence, lease);
  }
  absl::Status Complete(const Scope& scope, int64_t fence, const StoredResponse& r) override {
    return real_.Complete(scope, fence, r);
  }
  absl::Status FailFinal(const Scope& scope, int64_t fence, const StoredResponse& r) override {
    return real_.FailFinal(scope, fence, r);
  }
  absl::Status Release(const Scope& scope, int64_t fence) override {
    return real_.Release(scope, fence);
  }
  int64_t MaxResponseBytes() const override { return real_.MaxResponseBytes(); }
  absl::StatusOr<KeyRecord> Get(const Scope& scope) override { return real_.Get(scope); }
  absl::StatusOr<int64_t> SweepExpired(int64_t max_rows) override {
    return real_.SweepExpired(max_rows);
  }
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    return real_.ApplyLeaseBatch(writes);
  }
  absl::StatusOr<std::vector<KeyRecord>> List(const KeyQuery& query) override {
    return real_.List(query);
  }
  absl::Status Purge(const Scope& scope) override { return real_.Purge(scope); }
  absl::StatusOr<std::unique_ptr<StoreTransaction>> Begin() override { return real_.Begin(); }

 protected:
  Store& real_;
};

}  // namespace idem::gateway::testing

#endif  // IDEM_GATEWAY_TESTING_FORWARDING_STORE_H_
