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

}  // namespace
}  // namespace idem::testing
