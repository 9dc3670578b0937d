// The guard suites (src/guard/testing/) on SQLite, each test in a fresh file: on the store's own
// transactions, and on an application's own connection (RunOnceIn on a borrowed transaction).
#include "guard/testing/borrowed_guard_suite.h"
#include "guard/testing/guard_store_test.h"
#include "guard/testing/lease_recoverer_suite.h"
#include "idem/guard.h"
#include "store/testing/sqlite_caller_connection.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, GuardTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseGuardTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseRecovererTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, BorrowedGuardTest, ::testing::Values(SqliteCallerFactory()),
                         CallerFactoryName);

// Why docs/guard.md asks for BEGIN IMMEDIATE: under a plain BEGIN the transaction reads first
// (here the application's SELECT), and its claim must then upgrade to SQLite's write lock, which
// it cannot once another connection committed a write in between.
TEST(SqliteBorrowedGuard, ClaimUnderAPlainBeginAfterAnotherWriterCommittedIsUnavailable) {
  const CallerFactory factory = SqliteCallerFactory();
  auto first = factory.open_fresh(/*with_schema=*/true);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = factory.open_again();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE((*first)->Exec("BEGIN").ok());
  ASSERT_TRUE((*first)->QueryInt("SELECT COUNT(*) FROM idem_keys").ok());
  ASSERT_TRUE((*second)->Exec("CREATE TABLE other (id INTEGER)").ok());
  {
    auto tx = (*first)->Borrow({});
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto result = RunOnceIn(**tx, {"t", "k"}, "fp", [](Transaction&) {
      return absl::StatusOr<StoredResponse>(StoredResponse{.status = 200});
    });
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
    EXPECT_FALSE((*tx)->Doomed().ok());
  }
  ASSERT_TRUE((*first)->Exec("ROLLBACK").ok());
  EXPECT_EQ((*first)->QueryInt("SELECT COUNT(*) FROM idem_keys").value_or(-1), 0);
}

}  // namespace
}  // namespace idem::testing
