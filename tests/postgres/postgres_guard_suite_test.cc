// The guard suites (src/guard/testing/) on PostgreSQL, each test in a fresh schema: on the store's
// own transactions, and on an application's own connection (RunOnceIn on a borrowed transaction).
#include "guard/testing/borrowed_guard_suite.h"
#include "guard/testing/guard_store_test.h"
#include "guard/testing/lease_recoverer_suite.h"
#include "idem/borrowed_transaction.h"
#include "pg_test_support.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Postgres, GuardTest, ::testing::Values(pgtest::PostgresStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, LeaseGuardTest,
                         ::testing::Values(pgtest::PostgresStoreFactory()), StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, LeaseRecovererTest,
                         ::testing::Values(pgtest::PostgresStoreFactory()), StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, BorrowedGuardTest,
                         ::testing::Values(pgtest::PostgresCallerFactory()), CallerFactoryName);

// A statement of the application's own that fails after it borrowed its transaction makes
// PostgreSQL abort the transaction (every later statement: SQLSTATE 25P02, "in failed SQL
// transaction"). The guard's call was Internal and the transaction not doomed; now it is doomed
// as one the database broke (idem/store.h, Doomed): Unavailable, and the effect does not run.
TEST(PostgresBorrowedGuard, ATransactionPostgresAbortedAfterItWasBorrowedIsDoomedUnavailable) {
  const CallerFactory factory = pgtest::PostgresCallerFactory();
  auto conn = factory.open_fresh(/*with_schema=*/true);
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE((*conn)->Exec("BEGIN").ok());
  {
    auto tx = (*conn)->Borrow({});
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_FALSE((*conn)->Exec("SELECT 1 / 0").ok());
    int runs = 0;
    auto result = RunOnceIn(**tx, {"t", "k"}, "fp", [&](Transaction&) {
      ++runs;
      return absl::StatusOr<StoredResponse>(StoredResponse{.status = 200});
    });
    EXPECT_EQ(result.status().code(), absl::StatusCode::kUnavailable) << result.status();
    EXPECT_EQ((*tx)->Doomed().code(), absl::StatusCode::kUnavailable) << (*tx)->Doomed();
    EXPECT_EQ((*tx)->Query("SELECT 1").status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(runs, 0);
  }
  ASSERT_TRUE((*conn)->Exec("ROLLBACK").ok());
}

}  // namespace
}  // namespace idem::testing
