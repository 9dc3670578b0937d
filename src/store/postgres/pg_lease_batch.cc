#include "store/postgres/pg_lease_batch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "store/postgres/pg_error.h"
#include "store/postgres/pg_key_table.h"
#include "store/postgres/pg_lease_in_turn.h"
#include "store/postgres/pg_set_batch.h"
#include "store/postgres/pg_set_statements.h"

namespace idem::postgres {
namespace {

constexpr std::string_view kDatabaseNowSql =
    "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint";

// How often a batch is run when PostgreSQL chose it as a deadlock's victim: each time the other
// batch of the cycle goes on, so a second deadlock needs a new cycle; the last one is returned.
constexpr int kDeadlockAttempts = 4;

// The scopes of the valid writes, each once, in lock order.
std::vector<const Scope*> ScopesToLock(std::span<const LeaseWrite> writes,
                                       std::span<const size_t> order) {
  std::vector<const Scope*> scopes;
  for (size_t i : order) {
    const Scope& scope = writes[i].scope;
    if (!CheckWrite(writes[i]).ok()) continue;
    if (!scopes.empty() && scopes.back()->tenant == scope.tenant &&
        scopes.back()->key == scope.key) {
      continue;
    }
    scopes.push_back(&scope);
  }
  return scopes;
}

// Reads the batch's clock (`now_ms`; nullopt: the database's) and locks the rows of `scopes`, in
// one round trip with the statements deferred before it (BEGIN), planned as NowStatement says;
// the statements after it are planned for their values.
absl::StatusOr<int64_t> LockAndReadNow(PgConnection& conn, std::optional<int64_t> now_ms,
                                       std::span<const Scope* const> scopes) {
  std::vector<Statement> statements;
  statements.push_back(NowStatement(now_ms));
  if (!scopes.empty()) statements.push_back(LockRowsStatement(scopes));
  statements.push_back(CustomPlansStatement());  // for the statements run one at a time after it
  IDEM_ASSIGN_OR_RETURN(std::vector<Result> answers, conn.RunAll(statements));
  return ReadNow(answers.front());
}

// The writes of a batch inside its transaction (BEGIN deferred by the caller).
absl::StatusOr<std::vector<LeaseWriteResult>> ApplyInTransaction(PgConnection& conn,
                                                                 const Clock* clock,
                                                                 Millis retention,
                                                                 std::span<const LeaseWrite> writes,
                                                                 BatchRules rules) {
  const std::vector<size_t> order = LockOrder(writes);
  const std::vector<const Scope*> scopes = ScopesToLock(writes, order);
  if (RepeatsAScope(writes, order)) {
    IDEM_ASSIGN_OR_RETURN(
        const int64_t now,
        LockAndReadNow(conn, clock == nullptr ? std::nullopt : std::optional(clock->NowMillis()),
                       scopes));
    return ApplyInTurn(conn, now, retention, writes, order, rules);
  }
  IDEM_ASSIGN_OR_RETURN(SetBatchOutcome set,
                        ApplySetBased(conn, clock, retention, rules, writes, order, scopes));
  if (set.results.has_value()) return *std::move(set.results);
  // A claim must write over a record it did not lock: start again, one statement at a time,
  // after locking again. The fences drawn meanwhile are skipped, never handed out twice.
  IDEM_RETURN_IF_ERROR(conn.Run("ROLLBACK", {}, "rollback of a set-based lease batch").status());
  conn.Defer("BEGIN");
  IDEM_RETURN_IF_ERROR(LockAndReadNow(conn, set.now_ms, scopes).status());
  return ApplyInTurn(conn, set.now_ms, retention, writes, order, rules);
}

}  // namespace

absl::StatusOr<int64_t> StoreNow(PgConnection& conn, const Clock* clock) {
  if (clock != nullptr) return clock->NowMillis();
  IDEM_ASSIGN_OR_RETURN(Result result,
                        conn.Run(kDatabaseNowSql, {}, "reading the database's clock"));
  return ReadNow(result);
}

absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(PgConnection& conn,
                                                              const Clock* clock, Millis retention,
                                                              std::span<const LeaseWrite> writes,
                                                              BatchRules rules) {
  if (writes.empty()) return std::vector<LeaseWriteResult>();
  // One write needs no transaction of its own: each of its statements commits alone, as the
  // single calls always did.
  if (writes.size() == 1) {
    IDEM_ASSIGN_OR_RETURN(const int64_t now, StoreNow(conn, clock));
    const size_t only = 0;
    return ApplyInTurn(conn, now, retention, writes, {&only, 1}, rules);
  }
  absl::StatusOr<std::vector<LeaseWriteResult>> results;
  for (int attempt = 1;; ++attempt) {
    conn.Defer("BEGIN");  // goes out with the batch's first statement, in one round trip
    results = ApplyInTransaction(conn, clock, retention, writes, rules);
    if (results.ok()) break;
    conn.DropDeferred();
    if (!conn.broken() && !conn.Run("ROLLBACK", {}, "rollback of a lease batch").ok()) {
      conn.MarkBroken();
    }
    // The deadlock victim (pg_lease_batch.h, "Lock order") committed nothing: it runs again
    // from BEGIN, as a caller sending the same writes again would, after the other batch went on.
    if (conn.broken() || !IsDeadlock(results.status()) || attempt == kDeadlockAttempts) {
      return results.status();
    }
  }
  absl::StatusOr<Result> commit = conn.Run("COMMIT", {}, "commit of a lease batch");
  if (!commit.ok()) {
    const bool unknown = conn.lost();
    conn.MarkBroken();
    return absl::UnavailableError(fmt::format(
        "the lease batch's commit failed: {}; {}", std::string(commit.status().message()),
        unknown ? "its outcome is unknown (the connection was lost): look the keys up"
                : "nothing of it was committed"));
  }
  return results;
}

}  // namespace idem::postgres
