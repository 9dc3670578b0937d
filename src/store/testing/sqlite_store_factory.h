// Test support: the StoreFactory the store conformance suite and the guard suites run SQLite
// through. Each open_fresh makes a file in a directory of its own under the test temp dir;
// open_again reopens the newest one.
#ifndef IDEM_STORE_TESTING_SQLITE_STORE_FACTORY_H_
#define IDEM_STORE_TESTING_SQLITE_STORE_FACTORY_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "idem/sqlite_store.h"
#include "idem/store.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {

// The file the running test's open_fresh made.
inline std::string& CurrentSqliteStorePath() {
  static std::string path;
  return path;
}

inline StoreFactory SqliteStoreFactory() {
  return StoreFactory{
      .name = "sqlite",
      .open_fresh = [](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
        std::string dir = ::testing::TempDir() + "idem-sqlite-XXXXXX";
        if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("mkdtemp failed");
        CurrentSqliteStorePath() = dir + "/idem.db";
        return OpenSqliteStore(CurrentSqliteStorePath(), "", options);
      },
      .open_again = [](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
        return OpenSqliteStore(CurrentSqliteStorePath(), "", options);
      },
  };
}

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_SQLITE_STORE_FACTORY_H_
