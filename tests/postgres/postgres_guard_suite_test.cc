// The guard suites (src/guard/testing/) on PostgreSQL, each test in a fresh schema: on the store's
// own transactions, and on an application's own connection (RunOnceIn on a borrowed transaction).
#include "guard/testing/borrowed_guard_suite.h"
#include "guard/testing/guard_store_test.h"
#include "pg_test_support.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Postgres, GuardTest, ::testing::Values(pgtest::PostgresStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, LeaseGuardTest,
                         ::testing::Values(pgtest::PostgresStoreFactory()), StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, BorrowedGuardTest,
                         ::testing::Values(pgtest::PostgresCallerFactory()), CallerFactoryName);

}  // namespace
}  // namespace idem::testing
