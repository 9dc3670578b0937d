// The deletions of key records (key_table.h): the sweeper's and Store::Purge's.
#include <algorithm>

#include "common/status_macros.h"
#include "store/sqlite/key_table.h"

namespace idem::sqlite {
namespace {

// Runs a DELETE … RETURNING fence and returns how many rows it deleted, after advancing the
// counter past their fences: a record finished in a transaction may hold a fence above the
// counter (transaction_claims.h), and the key's next claim must still get a greater one.
absl::StatusOr<int64_t> DeleteCountingFences(Connection& conn, Statement& stmt) {
  int64_t deleted = 0;
  int64_t highest = 0;
  while (true) {
    IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
    if (!has_row) break;
    ++deleted;
    highest = std::max(highest, stmt.ColumnInt(0));
  }
  if (highest > 0) IDEM_RETURN_IF_ERROR(UseFence(conn, highest));
  return deleted;
}

}  // namespace

absl::StatusOr<int64_t> DeleteExpired(Connection& conn, int64_t now_ms, HostTime host,
                                      int64_t max_rows) {
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare(
          "DELETE FROM idem_keys WHERE rowid IN (SELECT rowid FROM idem_keys "
          "WHERE expires <= ?1 AND (state <> 'in_progress' OR (CASE WHEN lease_boot = ?3 "
          "THEN lease_host <= ?4 ELSE lease_until <= ?1 END)) LIMIT ?2) AND expires <= ?1 AND "
          "(state <> 'in_progress' OR (CASE WHEN lease_boot = ?3 THEN lease_host <= ?4 "
          "ELSE lease_until <= ?1 END)) RETURNING fence"));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(1, now_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(2, max_rows));
  IDEM_RETURN_IF_ERROR(BindHost(stmt, 3, host));
  return DeleteCountingFences(conn, stmt);
}

absl::StatusOr<int64_t> DeleteAny(Connection& conn, const Scope& scope) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt,
                        conn.Prepare("DELETE FROM idem_keys WHERE tenant = ?1 AND key = ?2 "
                                     "RETURNING fence"));
  IDEM_RETURN_IF_ERROR(stmt.BindText(1, scope.tenant));
  IDEM_RETURN_IF_ERROR(stmt.BindText(2, scope.key));
  return DeleteCountingFences(conn, stmt);
}

}  // namespace idem::sqlite
