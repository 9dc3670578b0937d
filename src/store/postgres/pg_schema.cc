#include "store/postgres/pg_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "store/postgres/pg_error.h"

namespace idem::postgres {
namespace {

constexpr Migration kMigrations[] = {
#include "pg_migrations.inc"
};

constexpr std::string_view kCreateMigrationsTable =
    "CREATE TABLE idem_schema_migrations (version integer PRIMARY KEY, name text NOT NULL, "
    "checksum text NOT NULL, applied_ms bigint NOT NULL)";

absl::Status ExecSimple(PgConnection& conn, const std::string& sql, std::string_view what) {
  Result result(PQexec(conn.raw(), sql.c_str()));
  absl::Status status = StatusFromResult(result.get(), conn.raw(), what);
  if (!status.ok() && PQstatus(conn.raw()) != CONNECTION_OK) conn.MarkBroken();
  return status;
}

struct Applied {
  int version;
  std::string name;
  std::string checksum;
};

absl::StatusOr<std::vector<Applied>> ReadApplied(PgConnection& conn) {
  IDEM_ASSIGN_OR_RETURN(
      Result tables,
      conn.Run("SELECT table_name FROM information_schema.tables WHERE table_schema = "
               "current_schema() AND table_name IN ('idem_keys', 'idem_schema_migrations')",
               {}, "reading the schema"));
  bool has_keys = false;
  bool has_migrations = false;
  for (int r = 0; r < PQntuples(tables.get()); ++r) {
    const std::string_view table = PQgetvalue(tables.get(), r, 0);
    has_keys = has_keys || table == "idem_keys";
    has_migrations = has_migrations || table == "idem_schema_migrations";
  }
  if (has_keys && !has_migrations) {
    return absl::FailedPreconditionError(
        "the database schema holds a table idem_keys that idem did not create (no "
        "idem_schema_migrations table): it is not idem's; point the URI at another database or "
        "schema (options=-csearch_path=...)");
  }
  if (!has_migrations) {
    IDEM_RETURN_IF_ERROR(
        conn.Run(kCreateMigrationsTable, {}, "creating idem_schema_migrations").status());
    return std::vector<Applied>{};
  }
  IDEM_ASSIGN_OR_RETURN(Result rows,
                        conn.Run("SELECT version, name, checksum FROM idem_schema_migrations "
                                 "ORDER BY version",
                                 {}, "reading idem_schema_migrations"));
  std::vector<Applied> applied;
  for (int r = 0; r < PQntuples(rows.get()); ++r) {
    applied.push_back({std::atoi(PQgetvalue(rows.get(), r, 0)), PQgetvalue(rows.get(), r, 1),
                       PQgetvalue(rows.get(), r, 2)});
  }
  return applied;
}

absl::Status CheckApplied(const std::vector<Applied>& applied,
                          std::span<const Migration> migrations) {
  const int newest = migrations.empty() ? 0 : migrations.back().version;
  for (const Applied& a : applied) {
    if (a.version > newest) {
      return absl::FailedPreconditionError(fmt::format(
          "the database's idem schema is at version {} ({}), newer than this idem knows ({}): "
          "upgrade idem, or point the URI at another database",
          a.version, a.name, newest));
    }
    auto known = std::find_if(migrations.begin(), migrations.end(),
                              [&](const Migration& m) { return m.version == a.version; });
    if (known == migrations.end() || MigrationChecksum(known->sql) != a.checksum) {
      return absl::FailedPreconditionError(fmt::format(
          "the database's idem schema migration {} ({}) differs from this idem's: the database "
          "was written by another idem build; point the URI at another database",
          a.version, a.name));
    }
  }
  return absl::OkStatus();
}

absl::Status Apply(PgConnection& conn, const Migration& migration, int64_t now_ms) {
  absl::Status status =
      ExecSimple(conn, std::string(migration.sql), fmt::format("migration {}", migration.name));
  if (!status.ok()) {
    if (absl::IsUnavailable(status)) return status;
    return absl::FailedPreconditionError(fmt::format(
        "{}; nothing of it was applied (fix the database, e.g. a conflicting object, and open "
        "again)",
        std::string(status.message())));
  }
  const SqlValue params[] = {int64_t{migration.version}, std::string(migration.name),
                             MigrationChecksum(migration.sql), now_ms};
  return conn
      .Run(
          "INSERT INTO idem_schema_migrations (version, name, checksum, applied_ms) "
          "VALUES ($1, $2, $3, $4)",
          params, "recording a migration")
      .status();
}

absl::Status MigrateLocked(PgConnection& conn, std::span<const Migration> migrations,
                           int64_t now_ms) {
  const SqlValue key[] = {kMigrationLockKey};
  IDEM_RETURN_IF_ERROR(
      conn.Run("SELECT pg_advisory_xact_lock($1)", key, "taking the migration lock").status());
  IDEM_ASSIGN_OR_RETURN(std::vector<Applied> applied, ReadApplied(conn));
  IDEM_RETURN_IF_ERROR(CheckApplied(applied, migrations));
  for (const Migration& migration : migrations) {
    const bool done = std::any_of(applied.begin(), applied.end(),
                                  [&](const Applied& a) { return a.version == migration.version; });
    if (!done) IDEM_RETURN_IF_ERROR(Apply(conn, migration, now_ms));
  }
  return absl::OkStatus();
}

}  // namespace

std::span<const Migration> KnownMigrations() { return kMigrations; }

std::string MigrationChecksum(std::string_view sql) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (char c : sql) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return fmt::format("{:016x}", hash);
}

absl::Status Migrate(PgConnection& conn, std::span<const Migration> migrations, int64_t now_ms,
                     std::chrono::milliseconds lock_timeout) {
  IDEM_RETURN_IF_ERROR(ExecSimple(conn, "BEGIN", "starting the migration"));
  absl::Status status = ExecSimple(conn,
                                   fmt::format("SET LOCAL lock_timeout = {}",
                                               std::max(lock_timeout, kMigrationLockWait).count()),
                                   "setting the migration's lock wait");
  if (status.ok()) status = MigrateLocked(conn, migrations, now_ms);
  if (status.ok()) status = ExecSimple(conn, "COMMIT", "committing the migration");
  if (!status.ok() && !conn.broken()) {
    // Nothing of a failed migration stays; a failed ROLLBACK means the connection is gone,
    // which rolls back as well.
    ExecSimple(conn, "ROLLBACK", "rolling back the migration").IgnoreError();
  }
  return status;
}

}  // namespace idem::postgres
