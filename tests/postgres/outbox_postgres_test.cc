// The outbox suite (src/outbox/testing/) on the PostgreSQL store, each test in a fresh schema.
#include "outbox/testing/outbox_suite.h"
#include "pg_test_support.h"

namespace idem::testing {
namespace {

INSTANTIATE_TEST_SUITE_P(Postgres, OutboxTest, ::testing::Values(pgtest::PostgresStoreFactory()),
                         StoreFactoryName);

}  // namespace
}  // namespace idem::testing
