// The store conformance suite, unchanged, on the PostgreSQL store: each test gets a fresh schema
// (CREATE SCHEMA, then search_path in the URI's options), which is much faster than a fresh
// database (no template copy, no checkpoint) and just as empty.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "idem/store.h"
#include "pg_test_support.h"
#include "store/testing/store_conformance.h"

namespace idem {
namespace {

// The schema of the running test; open_again reopens it.
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
  if (CurrentSchema().empty()) {
    return absl::FailedPreconditionError("open_again before open_fresh");
  }
  return OpenIn(CurrentSchema(), options);
}

using testing::StoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(Postgres, StoreConformanceTest,
                         ::testing::Values(testing::StoreFactory{"postgres", &OpenFresh,
                                                                 &OpenAgain}),
                         testing::StoreFactoryName);

}  // namespace
}  // namespace idem
