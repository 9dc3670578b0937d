// idem's schema in a SQLite database: versioned migrations (schema/NNNN_name.sql, embedded at
// build time) and the checks that keep idem away from files that are not its own.
//
// The applied versions are rows of the table idem_schema_migrations, which is also the marker
// that a database is idem's.
//
// Thread-safety: functions of one connection; the migration runs under SQLite's write lock, so
// processes opening one file at once apply each migration exactly once.
#ifndef IDEM_STORE_SQLITE_SQLITE_SCHEMA_H_
#define IDEM_STORE_SQLITE_SQLITE_SCHEMA_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

// Returns the newest schema version this build of idem knows.
int64_t LatestSchemaVersion();

// Checks, without writing anything, that the database is empty or idem's and not newer than
// this build, and returns its schema version (0 for an empty database). Errors: FailedPrecondition for a database that has tables but is not idem's, or
// whose schema is newer (both versions named); DataLoss for a file that is not a SQLite
// database; as FromSqlite otherwise.
absl::StatusOr<int64_t> CheckSchema(Connection& conn, const std::string& path);

// Applies every migration newer than the database's version in one BEGIN IMMEDIATE transaction,
// re-checking as CheckSchema does under the write lock. Nothing is applied on failure.
absl::Status MigrateSchema(Connection& conn, const std::string& path, int64_t now_ms);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_SQLITE_SCHEMA_H_
