// The guard suites (src/guard/testing/) on the SQLite store, each test in a fresh file.
#include "guard/testing/guard_store_test.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, GuardTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseGuardTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);

}  // namespace
}  // namespace idem::testing
