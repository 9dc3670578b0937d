// The guard suites (src/guard/testing/) on the SQLite store, each test in a fresh file.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "guard/testing/guard_store_test.h"
#include "idem/store.h"

namespace idem::testing {
namespace {

std::string& CurrentUri() {
  static std::string uri;
  return uri;
}

absl::StatusOr<std::unique_ptr<Store>> OpenFresh(const StoreOptions& options) {
  std::string pattern = (std::filesystem::temp_directory_path() / "idem-guard-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
  CurrentUri() = "sqlite:" + pattern + "/keys.db";
  return OpenStore(CurrentUri(), options);
}

absl::StatusOr<std::unique_ptr<Store>> OpenAgain(const StoreOptions& options) {
  return OpenStore(CurrentUri(), options);
}

const StoreFactory kSqlite{"sqlite", &OpenFresh, &OpenAgain};
INSTANTIATE_TEST_SUITE_P(Sqlite, GuardTest, ::testing::Values(kSqlite), StoreFactoryName);
INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseGuardTest, ::testing::Values(kSqlite), StoreFactoryName);

}  // namespace
}  // namespace idem::testing
