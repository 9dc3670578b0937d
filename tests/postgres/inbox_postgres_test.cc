// The inbox suites (src/inbox/testing/) on PostgreSQL, each test in a fresh schema: on the
// store's own transactions, and on an application's own connection (a borrowed transaction).
#include "inbox/testing/borrowed_inbox_suite.h"
#include "inbox/testing/inbox_suite.h"
#include "pg_test_support.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Postgres, InboxTest, ::testing::Values(pgtest::PostgresStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, BorrowedInboxTest,
                         ::testing::Values(pgtest::PostgresCallerFactory()), CallerFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, BorrowedInboxWithoutSchemaTest,
                         ::testing::Values(pgtest::PostgresCallerFactory()), CallerFactoryName);

// PostgreSQL aborts the whole transaction at a failed statement, the application's own
// statements included: the error says so.
TEST(PostgresBorrowedInbox, FailedStatementSaysTheCallersTransactionIsAborted) {
  auto conn = pgtest::PostgresCallerFactory().open_fresh(/*with_schema=*/true);
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE((*conn)->Exec("BEGIN").ok());
  {
    auto tx = (*conn)->Borrow({});
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto failed = (*tx)->Execute("SELECT 1/0");
    EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(failed.status().message().find("aborted your transaction"), std::string::npos)
        << failed.status();
  }
  EXPECT_FALSE((*conn)->Exec("SELECT 1").ok());  // the application's own statement fails too
  EXPECT_TRUE((*conn)->Exec("ROLLBACK").ok());
}

}  // namespace
}  // namespace idem::testing
