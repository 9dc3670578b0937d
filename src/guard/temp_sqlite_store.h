// Test support: a SQLite store in a fresh temporary folder, driven by a ManualClock.
#ifndef IDEM_GUARD_TEMP_SQLITE_STORE_H_
#define IDEM_GUARD_TEMP_SQLITE_STORE_H_

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "idem/clock.h"
#include "idem/store.h"

namespace idem::testing {

class TempSqliteStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "idem-guard-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    uri_ = "sqlite:" + (dir_ / "keys.db").string();
    store_ = OpenOrDie();
  }
  void TearDown() override {
    store_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Another handle on the same database, as a second process would open it.
  std::unique_ptr<Store> OpenOrDie() {
    StoreOptions options;
    options.clock = &clock_;
    options.lock_timeout = Millis(30'000);
    auto store = OpenStore(uri_, options);
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
  std::filesystem::path dir_;
  std::string uri_;
  std::unique_ptr<Store> store_;
};

}  // namespace idem::testing

#endif  // IDEM_GUARD_TEMP_SQLITE_STORE_H_
