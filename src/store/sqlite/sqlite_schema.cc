#include "store/sqlite/sqlite_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "common/status_macros.h"

namespace idem::sqlite {
namespace {

#include "store/sqlite/sqlite_migrations.inc"

constexpr char kMarkerTable[] = "idem_schema_migrations";

struct SchemaState {
  bool has_marker = false;
  std::vector<std::string> other_tables;
  int64_t version = 0;
};

absl::StatusOr<SchemaState> ReadSchemaState(Connection& conn) {
  SchemaState state;
  {
    IDEM_ASSIGN_OR_RETURN(Statement tables,
                          conn.Prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND "
                                       "name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"));
    while (true) {
      IDEM_ASSIGN_OR_RETURN(bool has_row, tables.Step());
      if (!has_row) break;
      std::string name = tables.ColumnBytes(0);
      if (name == kMarkerTable) {
        state.has_marker = true;
      } else {
        state.other_tables.push_back(std::move(name));
      }
    }
  }
  if (state.has_marker) {
    IDEM_ASSIGN_OR_RETURN(state.version,
                          conn.QueryInt("SELECT coalesce(max(version), 0) FROM "
                                        "idem_schema_migrations"));
  }
  return state;
}

absl::Status Judge(const SchemaState& state, const std::string& path) {
  if (!state.has_marker && !state.other_tables.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "'{}' is a SQLite database that idem did not create (it has tables such as '{}' but no "
        "{} table); point the store at a new file or at an idem database",
        path, state.other_tables.front(), kMarkerTable));
  }
  if (state.version > LatestSchemaVersion()) {
    return absl::FailedPreconditionError(fmt::format(
        "the idem database '{}' has schema version {}, newer than version {} that this idem "
        "knows; upgrade idem to open it",
        path, state.version, LatestSchemaVersion()));
  }
  return absl::OkStatus();
}

absl::Status ApplyPending(Connection& conn, int64_t from_version, int64_t now_ms) {
  IDEM_RETURN_IF_ERROR(conn.Exec(
      "CREATE TABLE IF NOT EXISTS idem_schema_migrations ("
      "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL)"));
  for (const Migration& migration : kMigrations) {
    if (migration.version <= from_version) continue;
    IDEM_RETURN_IF_ERROR(conn.Exec(migration.sql));
    IDEM_ASSIGN_OR_RETURN(Statement record,
                          conn.Prepare("INSERT INTO idem_schema_migrations (version, name, "
                                       "applied) VALUES (?1, ?2, ?3)"));
    IDEM_RETURN_IF_ERROR(record.BindInt(1, migration.version));
    IDEM_RETURN_IF_ERROR(record.BindText(2, migration.name));
    IDEM_RETURN_IF_ERROR(record.BindInt(3, now_ms));
    IDEM_RETURN_IF_ERROR(record.Step().status());
  }
  return absl::OkStatus();
}

absl::Status MigrateLocked(Connection& conn, const std::string& path, int64_t now_ms) {
  IDEM_ASSIGN_OR_RETURN(SchemaState state, ReadSchemaState(conn));
  IDEM_RETURN_IF_ERROR(Judge(state, path));
  if (state.has_marker && state.version == LatestSchemaVersion()) return absl::OkStatus();
  return ApplyPending(conn, state.version, now_ms);
}

}  // namespace

int64_t LatestSchemaVersion() {
  int64_t latest = 0;
  for (const Migration& migration : kMigrations) latest = std::max(latest, migration.version);
  return latest;
}

absl::StatusOr<int64_t> CheckSchema(Connection& conn, const std::string& path) {
  IDEM_ASSIGN_OR_RETURN(SchemaState state, ReadSchemaState(conn));
  IDEM_RETURN_IF_ERROR(Judge(state, path));
  return state.version;
}

absl::Status MigrateSchema(Connection& conn, const std::string& path, int64_t now_ms) {
  IDEM_RETURN_IF_ERROR(conn.Exec("BEGIN IMMEDIATE"));
  absl::Status status = MigrateLocked(conn, path, now_ms);
  if (status.ok()) status = conn.Exec("COMMIT");
  if (!status.ok() && conn.InTransaction()) conn.Exec("ROLLBACK").IgnoreError();
  return status;
}

}  // namespace idem::sqlite
