// Test support: fault injection around a real store, as leveldb's fault-injection tests do. A
// FaultyStore hands out transactions that pass every call to the real one, except that chosen
// savepoint statements fail (Unavailable unless told otherwise) the way a database failing them
// would: the transaction is then doomed (StoreTransaction::Doomed), as every store must doom it.
// Every other call, Commit included, still passes through: the guard must not commit it.
#ifndef IDEM_STORE_TESTING_FAULTY_STORE_H_
#define IDEM_STORE_TESTING_FAULTY_STORE_H_

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "idem/store.h"

namespace idem::testing {

// Which savepoint statement fails: the `nth` (1-based, counted over all transactions of the
// store) call of `kind` on a savepoint named `name`.
struct SavepointFault {
  enum class Kind { kSavepoint, kRollbackTo, kRelease };
  Kind kind = Kind::kRelease;
  std::string name;
  int nth = 1;
  // The code the failed statement reports (a database may fail a savepoint statement with any).
  absl::StatusCode code = absl::StatusCode::kUnavailable;
};

class FaultyTransaction final : public StoreTransaction {
 public:
  FaultyTransaction(std::unique_ptr<StoreTransaction> real, const SavepointFault& fault,
                    std::atomic<int>& seen)
      : real_(std::move(real)), fault_(fault), seen_(seen) {}

  absl::StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                            std::span<const SqlValue> params) override {
    return real_->Query(sql, params);
  }
  absl::StatusOr<int64_t> Execute(std::string_view sql, std::span<const SqlValue> params) override {
    return real_->Execute(sql, params);
  }
  void* native_handle() override { return real_->native_handle(); }
  absl::StatusOr<ClaimResult> Claim(const Scope& scope, std::string_view fingerprint,
                                    std::string_view owner) override {
    return real_->Claim(scope, fingerprint, owner);
  }
  absl::Status Finish(const Scope& scope, int64_t fence, KeyState state,
                      const StoredResponse& response) override {
    return real_->Finish(scope, fence, state, response);
  }
  absl::Status Savepoint(std::string_view name) override {
    if (absl::Status fault = Inject(SavepointFault::Kind::kSavepoint, name); !fault.ok()) {
      return fault;
    }
    return real_->Savepoint(name);
  }
  absl::Status RollbackToSavepoint(std::string_view name) override {
    if (absl::Status fault = Inject(SavepointFault::Kind::kRollbackTo, name); !fault.ok()) {
      return fault;
    }
    return real_->RollbackToSavepoint(name);
  }
  absl::Status ReleaseSavepoint(std::string_view name) override {
    if (absl::Status fault = Inject(SavepointFault::Kind::kRelease, name); !fault.ok()) {
      return fault;
    }
    return real_->ReleaseSavepoint(name);
  }
  // Passes through even when doomed: what is tested is that the guard never commits a doomed
  // transaction, not that the wrapper refuses to.
  absl::Status Commit() override { return real_->Commit(); }
  absl::Status Rollback() override { return real_->Rollback(); }
  absl::Status Doomed() const override { return doomed_.ok() ? real_->Doomed() : doomed_; }

 private:
  absl::Status Inject(SavepointFault::Kind kind, std::string_view name) {
    if (kind != fault_.kind || name != fault_.name || ++seen_ != fault_.nth) {
      return absl::OkStatus();
    }
    doomed_ = absl::Status(
        fault_.code,
        fmt::format("injected fault: savepoint statement on '{}' failed", std::string(name)));
    return doomed_;
  }

  std::unique_ptr<StoreTransaction> real_;
  const SavepointFault fault_;
  std::atomic<int>& seen_;
  absl::Status doomed_;
};

// A Store whose lease-mode calls go to the real store and whose transactions are
// FaultyTransactions. REQUIRES: `real` outlives it.
class FaultyStore final : public Store {
 public:
  FaultyStore(Store& real, SavepointFault fault) : real_(real), fault_(std::move(fault)) {}

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
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    return real_.ApplyLeaseBatch(writes);
  }
  absl::StatusOr<std::unique_ptr<StoreTransaction>> Begin() override {
    absl::StatusOr<std::unique_ptr<StoreTransaction>> real = real_.Begin();
    if (!real.ok()) return real.status();
    return std::make_unique<FaultyTransaction>(*std::move(real), fault_, seen_);
  }

 private:
  Store& real_;
  const SavepointFault fault_;
  std::atomic<int> seen_{0};
};

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_FAULTY_STORE_H_
