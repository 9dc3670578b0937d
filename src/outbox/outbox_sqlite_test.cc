// The outbox suite (src/outbox/testing/) on the SQLite store, each test in a fresh file.
#include "outbox/testing/outbox_suite.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Sqlite, OutboxTest, ::testing::Values(SqliteStoreFactory()),
                         StoreFactoryName);

}  // namespace
}  // namespace idem::testing
