// idem's schema on PostgreSQL: numbered migrations (schema/NNNN_*.sql) applied at open, all in
// one transaction under an advisory lock, so that several processes may open at once and a
// failed migration leaves nothing half-applied.
#ifndef IDEM_STORE_POSTGRES_PG_SCHEMA_H_
#define IDEM_STORE_POSTGRES_PG_SCHEMA_H_

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
// are missing (tests pass their own list; the store passes KnownMigrations()).
// Errors: FailedPrecondition for a schema that is not idem's, one newer than this idem, one whose
// applied migrations differ from this idem's, or a migration the server rejected (nothing of it
// is applied); Unavailable when the server is busy or gone.
absl::Status Migrate(PgConnection& conn, std::span<const Migration> migrations, int64_t now_ms);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_SCHEMA_H_
