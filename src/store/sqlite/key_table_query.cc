// SelectMany: the records of a KeyQuery (idem keys list, the gateway's recovery of lapsed claims).
#include <fmt/format.h>

#include <string>

#include "common/status_macros.h"
#include "store/sqlite/key_table.h"

namespace idem::sqlite {

absl::StatusOr<std::vector<KeyRecord>> SelectMany(Connection& conn, const KeyQuery& query,
                                                  int64_t now_ms, HostTime host) {
  // Fixed parameters: ?1 now, ?2 limit; then one per filter that is set, in this order. Lapsed
  // claims are read from the partial index idem_keys_in_progress (migration 6), named: left to
  // itself the planner walks the primary key for the ORDER BY, every finished record included
  // (0.7 s over a million records; bench/RESULTS.md).
  std::string sql = fmt::format("SELECT{}FROM idem_keys{} WHERE 1", kKeyColumns,
                                query.lapsed ? " INDEXED BY idem_keys_in_progress" : "");
  int next = 3;
  const auto add = [&](std::string_view condition) {
    sql += fmt::format(fmt::runtime(condition), next, next + 1);
    next += condition.find("{1}") != std::string_view::npos ? 2 : 1;
  };
  if (!query.include_expired) sql += " AND expires > ?1";
  if (query.tenant) add(" AND tenant = ?{0}");
  if (query.state) add(" AND state = ?{0}");
  if (query.older_than) add(" AND created <= ?1 - ?{0}");
  if (query.newer_than) add(" AND created > ?1 - ?{0}");
  if (query.after) add(" AND (tenant, key) > (?{0}, ?{1})");
  // A lease has passed as key_table.h's time rules say.
  if (query.lapsed) {
    add(" AND state = 'in_progress' AND (CASE WHEN lease_boot = ?{0} THEN lease_host <= ?{1} "
        "ELSE lease_until <= ?1 END)");
  }
  sql += " ORDER BY tenant, key LIMIT ?2";
  IDEM_ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(sql));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(1, now_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(2, query.limit));
  int i = 3;
  if (query.tenant) IDEM_RETURN_IF_ERROR(stmt.BindText(i++, *query.tenant));
  if (query.state) IDEM_RETURN_IF_ERROR(stmt.BindText(i++, KeyStateName(*query.state)));
  if (query.older_than) IDEM_RETURN_IF_ERROR(stmt.BindInt(i++, query.older_than->count()));
  if (query.newer_than) IDEM_RETURN_IF_ERROR(stmt.BindInt(i++, query.newer_than->count()));
  if (query.after) {
    IDEM_RETURN_IF_ERROR(stmt.BindText(i++, query.after->tenant));
    IDEM_RETURN_IF_ERROR(stmt.BindText(i++, query.after->key));
  }
  if (query.lapsed) {
    IDEM_RETURN_IF_ERROR(BindHost(stmt, i, host));
    i += 2;
  }
  std::vector<KeyRecord> records;
  while (true) {
    IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
    if (!has_row) return records;
    IDEM_ASSIGN_OR_RETURN(KeyRecord record, ReadRecord(stmt));
    records.push_back(std::move(record));
  }
}

}  // namespace idem::sqlite
