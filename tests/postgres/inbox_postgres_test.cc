// The inbox suite (src/inbox/testing/) on the PostgreSQL store, each test in a fresh schema.
#include "inbox/testing/inbox_suite.h"
#include "pg_test_support.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Postgres, InboxTest, ::testing::Values(pgtest::PostgresStoreFactory()),
                         StoreFactoryName);

}  // namespace
}  // namespace idem::testing
