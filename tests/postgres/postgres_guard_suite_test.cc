// The guard suites (src/guard/testing/) on the PostgreSQL store, each test in a fresh schema.
#include <memory>
#include <string>

#include "guard/testing/guard_store_test.h"
#include "idem/store.h"
#include "pg_test_support.h"

namespace idem::testing {
namespace {

std::string& CurrentSchema() {
  static std::string schema;
  return schema;
}

absl::StatusOr<std::unique_ptr<Store>> OpenIn(const std::string& schema,
                                              const StoreOptions& options) {
  absl::StatusOr<std::string> uri = pgtest::ServerUri();
  if (!uri.ok()) return uri.status();
  return OpenStore(pgtest::UriWithSchema(*uri, schema), options);
}

absl::StatusOr<std::unique_ptr<Store>> OpenFresh(const StoreOptions& options) {
  absl::StatusOr<std::string> schema = pgtest::CreateFreshSchema();
  if (!schema.ok()) return schema.status();
  CurrentSchema() = *schema;
  return OpenIn(*schema, options);
}

absl::StatusOr<std::unique_ptr<Store>> OpenAgain(const StoreOptions& options) {
  return OpenIn(CurrentSchema(), options);
}

const StoreFactory kPostgres{"postgres", &OpenFresh, &OpenAgain};
INSTANTIATE_TEST_SUITE_P(Postgres, GuardTest, ::testing::Values(kPostgres), StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Postgres, LeaseGuardTest, ::testing::Values(kPostgres), StoreFactoryName);

}  // namespace
}  // namespace idem::testing
