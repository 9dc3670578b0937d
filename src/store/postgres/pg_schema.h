// idem's schema on PostgreSQL: numbered migrations (schema/NNNN_*.sql) applied at open, all in
// one transaction under an advisory lock, so that several processes may open at once and a
// failed migration leaves nothing half-applied.
#ifndef IDEM_STORE_POSTGRES_PG_SCHEMA_H_
#define IDEM_STORE_POSTGRES_PG_SCHEMA_H_

#include <chrono>
#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "store/postgres/pg_connection.h"

namespace idem::postgres {

struct Migration {
  int version;            // the file's number; persisted: never renumber
  std::string_view name;  // the file name
  std::string_view sql;
};

// Returns the migrations this idem knows, in version order.
std::span<const Migration> KnownMigrations();

// Returns the checksum stored beside each applied migration (64-bit FNV-1a, hex).
std::string MigrationChecksum(std::string_view sql);

// Brings the schema of `conn`'s search_path to the newest version, applying `migrations` that
// are missing (tests pass their own list; the store passes KnownMigrations()). Waits for another
// process's migration (processes started together, each opening) for `lock_timeout` but at least
// kMigrationLockWait, within the connection's statement_timeout.
// Errors: FailedPrecondition for a schema that is not idem's, one newer than this idem, one whose
// applied migrations differ from this idem's, or a migration the server rejected (nothing of it
// is applied); Unavailable when the server is busy or gone.
absl::Status Migrate(PgConnection& conn, std::span<const Migration> migrations, int64_t now_ms,
                     std::chrono::milliseconds lock_timeout);

// The advisory lock that serialises migrations of every idem store in the database
// (transaction-scoped: released at COMMIT or ROLLBACK, also when the connection dies). "idem" in
// ASCII, then 1. Persisted in effect: processes of two idem versions must take the same one.
inline constexpr int64_t kMigrationLockKey = 0x6964656d01;

// The least an opening waits for the migration lock. Every opening takes that lock, if only to
// read which migrations are applied; a lock_timeout set short for claims (a quick 409 under
// contention) must not turn "another process is opening" into a failed start.
inline constexpr std::chrono::milliseconds kMigrationLockWait = std::chrono::seconds(30);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_SCHEMA_H_
