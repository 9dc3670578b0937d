// The guard suites (src/guard/testing/) on the PostgreSQL store, each test in a fresh schema.
#include "guard/testing/guard_store_test.h"
#include "pg_test_support.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Postgres, GuardTest, ::testing::Values(pgtest::PostgresStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, LeaseGuardTest,
                         ::testing::Values(pgtest::PostgresStoreFactory()), StoreFactoryName);

}  // namespace
}  // namespace idem::testing
