// The inbox suites (src/inbox/testing/) on SQLite, each test in a fresh file: on the store's own
// transactions, and on an application's own connection (a borrowed transaction).
#include "inbox/testing/borrowed_inbox_suite.h"
#include "inbox/testing/inbox_suite.h"
#include "store/testing/sqlite_caller_connection.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, InboxTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, BorrowedInboxTest, ::testing::Values(SqliteCallerFactory()),
                         CallerFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, BorrowedInboxWithoutSchemaTest,
                         ::testing::Values(SqliteCallerFactory()), CallerFactoryName);

}  // namespace
}  // namespace idem::testing
