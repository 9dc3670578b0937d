// The inbox suite (src/inbox/testing/) on the SQLite store, each test in a fresh file.
#include "inbox/testing/inbox_suite.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, InboxTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);

}  // namespace
}  // namespace idem::testing
