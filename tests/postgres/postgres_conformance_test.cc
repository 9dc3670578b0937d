// The store conformance suite, unchanged, on the PostgreSQL store: each test gets a fresh schema
// (CREATE SCHEMA, then search_path in the URI's options), which is much faster than a fresh
// database (no template copy, no checkpoint) and just as empty.
#include <gtest/gtest.h>

#include "pg_test_support.h"
#include "store/testing/store_conformance.h"

namespace idem {
namespace {

using testing::StoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformanceTest,
                         ::testing::Values(pgtest::PostgresStoreFactory()),
                         testing::StoreFactoryName);
using testing::StoreLostAckTest;
INSTANTIATE_TEST_SUITE_P(Postgres, StoreLostAckTest,
                         ::testing::Values(pgtest::PostgresStoreFactory()),
                         testing::StoreFactoryName);

}  // namespace
}  // namespace idem
