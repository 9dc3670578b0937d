// How a sqlite: URI and StoreOptions become the settings the SQLite store opens with.
//
// Thread-safety: pure functions.
#ifndef IDEM_STORE_SQLITE_SQLITE_OPTIONS_H_
#define IDEM_STORE_SQLITE_SQLITE_OPTIONS_H_

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/host_clock.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

// What to check of the file's integrity at open (URI option integrity=off|quick|full).
enum class IntegrityCheck { kOff, kQuick, kFull };

struct OpenSettings {
  std::string path;  // as handed to sqlite3_open_v2
  IntegrityCheck integrity = IntegrityCheck::kOff;
  bool create_if_missing = true;
  ConnectionSettings connection;
  int max_connections = 8;
  Millis retention{0};
  Clock* clock = nullptr;  // never null
  // The clock leases run on (key_table.h, "Time rules"): SystemHostClock() beside the system
  // clock; null (leases on `clock` alone) beside a clock the caller injected.
  const HostClock* host_clock = nullptr;
};

// Returns the settings for `path` and `uri_query` ("synchronous=full|normal",
// "integrity=off|quick|full", '&'-separated, may be empty; the URI wins over
// StoreOptions::durable_commits).
// Errors: InvalidArgument for an empty or in-memory path, an unknown query key or value, or
// options out of range (max_connections < 1, retention <= 0, lock_timeout < 0).
absl::StatusOr<OpenSettings> ResolveOpenSettings(std::string_view path,
                                                 std::string_view uri_query,
                                                 const StoreOptions& options);

// OpenSqliteStore (idem/sqlite_store.h) with leases on `host_clock` (null: on the store's clock
// alone), whatever clock `options` injects: for tests of the host clock.
absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStoreWithHostClock(std::string_view path,
                                                                    std::string_view uri_query,
                                                                    const StoreOptions& options,
                                                                    const HostClock* host_clock);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_SQLITE_OPTIONS_H_
