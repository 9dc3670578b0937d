// The guard suites (src/guard/testing/) on SQLite, each test in a fresh file: on the store's own
// transactions, and on an application's own connection (RunOnceIn on a borrowed transaction).
#include "guard/testing/borrowed_guard_suite.h"
#include "guard/testing/guard_store_test.h"
#include "store/testing/sqlite_caller_connection.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, GuardTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseGuardTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, BorrowedGuardTest, ::testing::Values(SqliteCallerFactory()),
                         CallerFactoryName);

}  // namespace
}  // namespace idem::testing
