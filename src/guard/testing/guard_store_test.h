// Test support: the guard suites (guard_suite.cc, lease_guard_suite.cc) run on every store. Each
// test gets a fresh store over an empty keyspace, opened by the store's StoreFactory (the one the
// store conformance suite uses) and driven by a ManualClock.
//
// A backend instantiates the suites in its own test binary:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, GuardTest, ::testing::Values(factory), StoreFactoryName);
//   INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseGuardTest, ::testing::Values(factory), ...);
#ifndef IDEM_GUARD_TESTING_GUARD_STORE_TEST_H_
#define IDEM_GUARD_TESTING_GUARD_STORE_TEST_H_

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "idem/clock.h"
#include "idem/guard.h"
#include "idem/lease_guard.h"
#include "idem/store.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {

class GuardStoreTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  GuardStoreTest() {
    options_.clock = &clock_;
    options_.lock_timeout = Millis(30'000);
  }

  void SetUp() override {
    auto store = GetParam().open_fresh(options_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Another handle on the same keyspace, as a second process would open it.
  std::unique_ptr<Store> OpenOrDie() {
    auto store = GetParam().open_again(options_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  // Counts the rows of `table` through a fresh transaction.
  int64_t CountRows(const std::string& table) {
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok()) << tx.status();
    auto rows = (*tx)->Query("SELECT COUNT(*) FROM " + table);
    EXPECT_TRUE(rows.ok()) << rows.status();
    EXPECT_TRUE((*tx)->Rollback().ok());
    return rows.ok() ? std::get<int64_t>((*rows)[0][0]) : -1;
  }

  ManualClock clock_;
  StoreOptions options_;
  std::unique_ptr<Store> store_;
};

// The guard suite's fixture: a table `effects` for the effects to write.
class GuardTest : public GuardStoreTest {
 protected:
  void SetUp() override {
    GuardStoreTest::SetUp();
    auto tx = store_->Begin();
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_TRUE((*tx)->Execute("CREATE TABLE effects(key TEXT PRIMARY KEY, amount BIGINT)").ok());
    ASSERT_TRUE((*tx)->Commit().ok());
  }

  // An effect that writes one row in the guard's transaction and answers `status`.
  Effect WriteRow(const std::string& key, int status, std::atomic<int>* runs = nullptr) {
    return [key, status, runs](Transaction& tx) -> absl::StatusOr<StoredResponse> {
      if (runs) runs->fetch_add(1);
      SqlValue params[] = {key, int64_t{5}};
      auto inserted = tx.Execute("INSERT INTO effects(key, amount) VALUES ($1, $2)", params);
      if (!inserted.ok()) return inserted.status();
      return StoredResponse{.status = status,
                            .headers = {{"Content-Type", "application/json"}},
                            .body = "{\"key\":\"" + key + "\"}"};
    };
  }

  Scope scope_{"tenant-a", "key-1"};
};

// The lease guard suite's fixture.
class LeaseGuardTest : public GuardStoreTest {
 protected:
  LeaseOptions Options(std::string owner) {
    LeaseOptions options;
    options.lease = 10s;
    options.owner = std::move(owner);
    return options;
  }

  Scope scope_{"", "order-7"};
  StoredResponse ok_{.status = 201, .headers = {{"Location", "/orders/7"}}, .body = "created"};
};

}  // namespace idem::testing

#endif  // IDEM_GUARD_TESTING_GUARD_STORE_TEST_H_
