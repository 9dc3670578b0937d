// The fixture of the SQL function tests (sql_*_test.cc): a fresh schema on the fixture's server,
// migrated by opening the C++ store there (as every idem program does, which installs schema
// idem's functions), a plain libpq session to it, and a business table `charges` without a
// unique constraint, so a doubled effect shows as a second row.
#ifndef IDEM_TESTS_POSTGRES_SQL_FUNCTIONS_FIXTURE_H_
#define IDEM_TESTS_POSTGRES_SQL_FUNCTIONS_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "idem/store.h"
#include "pg_test_support.h"
#include "sql_session.h"

namespace idem::pgtest {

class SqlFunctionsFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<FreshSchema> fresh = CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    uri_ = fresh->uri;
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    conn_ = Connect();
    ASSERT_NE(conn_, nullptr);
    ASSERT_TRUE(conn_->Exec("CREATE TABLE charges (key text NOT NULL, id text NOT NULL)").ok());
  }

  std::unique_ptr<SqlSession> Connect() {
    std::string error;
    std::unique_ptr<SqlSession> session = SqlSession::Open(uri_, &error);
    EXPECT_NE(session, nullptr) << error;
    return session;
  }

  // The first column of the first row of `sql`, run on a session of its own.
  std::string Scalar(const std::string& sql) {
    std::unique_ptr<SqlSession> session = Connect();
    if (session == nullptr) return "<no connection>";
    SqlAnswer a = session->Exec(sql);
    return a.ok() ? a.At(0, 0) : "<" + a.sqlstate + " " + a.message + ">";
  }

  // How many server processes wait for a lock `pid` holds.
  int BlockedBy(int pid) {
    const std::string count = Scalar("SELECT count(*) FROM pg_stat_activity WHERE " +
                                     std::to_string(pid) + " = ANY(pg_blocking_pids(pid))");
    return std::atoi(count.c_str());
  }

  // Calls `condition` until it holds or `bound` passes; returns its last result.
  static bool Eventually(const std::function<bool()>& condition,
                         std::chrono::milliseconds bound = std::chrono::seconds(20)) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (!condition()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // a poll, not a wait for
    }
    return true;
  }

  std::string uri_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<SqlSession> conn_;
};

}  // namespace idem::pgtest

#endif  // IDEM_TESTS_POSTGRES_SQL_FUNCTIONS_FIXTURE_H_
