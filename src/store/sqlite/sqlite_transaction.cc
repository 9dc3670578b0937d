#include "store/sqlite/sqlite_transaction.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>

#include "common/status_macros.h"
#include "core/transaction_control.h"
#include "idem/key.h"
#include "store/sqlite/caller_sql.h"
#include "store/sqlite/key_table.h"

namespace idem::sqlite {
namespace {

// The lease of a claim made in a transaction: the default lease of lease mode, as PostgreSQL's.
const Millis kTransactionLease = ClaimRequest{}.lease;

bool IsSqlIdentifier(std::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!letter && !(digit && i > 0)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteTransaction>> SqliteTransaction::Begin(
    ConnectionPool::Lease lease, const Clock& clock, Millis retention) {
  IDEM_RETURN_IF_ERROR(lease->Run("BEGIN IMMEDIATE"));
  std::unique_ptr<SqliteTransaction> tx(
      new SqliteTransaction(std::move(lease), clock, retention, /*borrowed=*/false));
  tx->SetHooks(true);
  return tx;
}

absl::StatusOr<std::unique_ptr<SqliteTransaction>> SqliteTransaction::Borrow(
    ConnectionPool::Lease lease, const Clock& clock, Millis retention) {
  if (!lease->InTransaction()) {
    return absl::FailedPreconditionError(
        "no transaction is open on this sqlite3 connection: run BEGIN IMMEDIATE on it first, "
        "then borrow it; idem works inside your transaction and leaves COMMIT or ROLLBACK to you");
  }
  // No commit or rollback hooks: SQLite cannot hand back the owner's own hooks afterwards.
  return std::unique_ptr<SqliteTransaction>(
      new SqliteTransaction(std::move(lease), clock, retention, /*borrowed=*/true));
}

SqliteTransaction::~SqliteTransaction() {
  if (!borrowed_) Rollback().IgnoreError();
}

int SqliteTransaction::OnCommit(void* self) {
  auto* tx = static_cast<SqliteTransaction*>(self);
  if (tx->ending_) return 0;
  tx->ended_outside_ = true;
  return 1;  // not the store's commit: SQLite turns it into a rollback
}

void SqliteTransaction::OnRollback(void* self) {
  auto* tx = static_cast<SqliteTransaction*>(self);
  if (!tx->ending_) tx->ended_outside_ = true;
}

void SqliteTransaction::SetHooks(bool on) {
  if (borrowed_) return;
  sqlite3_commit_hook(lease_->db(), on ? &OnCommit : nullptr, on ? this : nullptr);
  sqlite3_rollback_hook(lease_->db(), on ? &OnRollback : nullptr, on ? this : nullptr);
}

void SqliteTransaction::End() {
  open_ = false;
  SetHooks(false);
}

void SqliteTransaction::Doom(absl::Status why) {
  if (doomed_.ok()) doomed_ = std::move(why);
}

absl::Status SqliteTransaction::Gate(std::string_view operation, bool after_failure_ok) {
  if (!open_) {
    return absl::InternalError(fmt::format(
        "{}: the transaction was already committed or rolled back; Begin() a new one", operation));
  }
  if (!doomed_.ok()) return doomed_;
  if (borrowed_ && !lease_->InTransaction()) {
    Doom(BorrowedTransactionEnded("sqlite3"));
    return doomed_;
  }
  if (ended_outside_ || !lease_->InTransaction()) {
    Doom(absl::InternalError(
        "the transaction was committed or rolled back outside the store (through "
        "native_handle()?); SQLite rolled it back and nothing of it was kept: roll back and run "
        "it again, and never end the store's transaction yourself"));
    return doomed_;
  }
  if (failed_ && !after_failure_ok) {
    return absl::InternalError(fmt::format(
        "{}: an earlier statement of this transaction failed; it is good only for rolling back "
        "(to a savepoint, or whole)",
        operation));
  }
  return absl::OkStatus();
}

absl::Status SqliteTransaction::Track(absl::Status status, bool dooming) {
  if (ended_outside_ || !lease_->InTransaction()) {
    if (status.ok()) return Gate("running SQL");  // ended by the caller: Gate dooms it
    Doom(absl::UnavailableError(fmt::format(
        "SQLite ended the transaction itself after an error ({}); nothing of it was kept, and "
        "later statements are refused rather than run outside it: roll back and retry",
        std::string(status.message()))));
    return doomed_;
  }
  if (status.ok()) return status;
  failed_ = true;
  if (dooming || absl::IsUnavailable(status)) Doom(status);
  return status;
}

absl::StatusOr<Statement> SqliteTransaction::PrepareBound(std::string_view sql,
                                                          std::span<const SqlValue> params) {
  // An effect's own ROLLBACK TO is what a failed transaction is good for, as the store's own.
  IDEM_RETURN_IF_ERROR(Gate("running SQL", failed_ && IsRollbackToSavepoint(sql)));
  // Refused before SQLite sees it: never run, and not a failed statement.
  if (IsTransactionControl(sql)) {
    return absl::InvalidArgumentError(fmt::format(
        "the SQL would begin, commit or roll back the transaction, or touch the store's own "
        "savepoints (idem_*); the store does that (use your own savepoints for partial undo); "
        "not run (in: {})",
        sql));
  }
  // SQL naming the key tables must find this transaction's claims there.
  if (claims_.deferring() && TransactionClaims::NamesKeyTables(sql)) {
    IDEM_RETURN_IF_ERROR(StopDeferring());
  }
  absl::StatusOr<Statement> prepared = lease_->Prepare(sql);
  if (!prepared.ok()) return Track(prepared.status());
  Statement stmt = *std::move(prepared);
  // A statement outside the connection's cache is analysed afresh every time.
  StatementNotes uncached;
  StatementNotes& notes = stmt.notes() != nullptr ? *stmt.notes() : uncached;
  if (!notes.analysed) AnalyseParameters(stmt.get(), notes);
  // Every parameter is some $N with N <= params.size(), and every $1..$params.size() is used.
  const size_t count = notes.dollar_of_param.size();
  if (count > 0 && (notes.max_dollar == 0 || notes.max_dollar > params.size())) {
    const auto bad = std::find_if(notes.dollar_of_param.begin(), notes.dollar_of_param.end(),
                                  [&params](size_t n) { return n == 0 || n > params.size(); });
    return absl::InvalidArgumentError(fmt::format(
        "the SQL uses parameter {} but {} parameter(s) were passed; write parameters as "
        "$1..$N and pass one value for each (in: {})",
        bad - notes.dollar_of_param.begin() + 1, params.size(), sql));
  }
  if (params.size() > notes.dollar_prefix) {
    return absl::InvalidArgumentError(
        fmt::format("parameter ${} was passed but the SQL does not use it (in: {})",
                    notes.dollar_prefix + 1, sql));
  }
  for (size_t i = 0; i < count; ++i) {
    const size_t n = notes.bound_dollar[i];
    if (n != 0) IDEM_RETURN_IF_ERROR(BindValue(stmt, static_cast<int>(i + 1), params[n - 1]));
  }
  return stmt;
}

absl::StatusOr<std::vector<SqlRow>> SqliteTransaction::Query(std::string_view sql,
                                                             std::span<const SqlValue> params) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt, PrepareBound(sql, params));
  std::vector<SqlRow> rows;
  while (true) {
    absl::StatusOr<bool> has_row = stmt.Step();
    if (!has_row.ok()) return Track(has_row.status());
    if (!*has_row) break;
    SqlRow row;
    row.reserve(static_cast<size_t>(stmt.ColumnCount()));
    for (int col = 0; col < stmt.ColumnCount(); ++col) row.push_back(ColumnValue(stmt, col));
    rows.push_back(std::move(row));
  }
  IDEM_RETURN_IF_ERROR(Track(absl::OkStatus()));
  ClearFailureIfRolledBack(sql);
  IDEM_RETURN_IF_ERROR(FollowSavepoint(sql));
  return rows;
}

absl::StatusOr<int64_t> SqliteTransaction::Execute(std::string_view sql,
                                                   std::span<const SqlValue> params) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt, PrepareBound(sql, params));
  const int64_t before = sqlite3_total_changes64(lease_->db());
  while (true) {
    absl::StatusOr<bool> has_row = stmt.Step();
    if (!has_row.ok()) return Track(has_row.status());
    if (!*has_row) break;
  }
  IDEM_RETURN_IF_ERROR(Track(absl::OkStatus()));
  ClearFailureIfRolledBack(sql);
  IDEM_RETURN_IF_ERROR(FollowSavepoint(sql));
  // sqlite3_changes64 reports the last INSERT/UPDATE/DELETE, which is this statement only when
  // it changed something; DDL and SELECT change nothing.
  if (sqlite3_total_changes64(lease_->db()) == before) return 0;
  return sqlite3_changes64(lease_->db());
}

void SqliteTransaction::ClearFailureIfRolledBack(std::string_view sql) {
  // Every savepoint there is was taken before the failure (none can be taken after it), so
  // rolling back to one undid the failed statement.
  if (failed_ && IsRollbackToSavepoint(sql)) failed_ = false;
}

absl::Status SqliteTransaction::StopDeferring() {
  IDEM_RETURN_IF_ERROR(Gate("running SQL", /*after_failure_ok=*/true));
  return Track(claims_.Flush(*lease_), /*dooming=*/true);
}

absl::Status SqliteTransaction::FollowSavepoint(std::string_view sql) {
  const SavepointStatement statement = ParseSavepointStatement(sql);
  switch (statement.verb) {
    case SavepointStatement::Verb::kNone:
      return absl::OkStatus();
    case SavepointStatement::Verb::kSavepoint:
      claims_.OnSavepoint(statement.name);
      return absl::OkStatus();
    case SavepointStatement::Verb::kRelease:
      claims_.OnRelease(statement.name);
      return absl::OkStatus();
    case SavepointStatement::Verb::kRollbackTo:
      return Track(claims_.OnRollbackTo(*lease_, statement.name), /*dooming=*/true);
  }
  return absl::OkStatus();
}

// SQL run through the handle is out of the store's sight: the claims are written first, and
// whatever it rolls back is assumed to include their outcomes.
void* SqliteTransaction::native_handle() {
  if (open_ && !borrowed_) {
    if (claims_.deferring()) StopDeferring().IgnoreError();
    claims_.OnUnfollowedRollback();
  }
  return lease_->db();
}

absl::StatusOr<ClaimResult> SqliteTransaction::Claim(const Scope& scope,
                                                     std::string_view fingerprint,
                                                     std::string_view owner) {
  IDEM_RETURN_IF_ERROR(Gate("claiming a key"));
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  const int64_t now = clock_.NowMillis();
  // The claim is invisible to others until commit; its lease is what a second claim of the key in
  // this same transaction (a nested guard call) sees: live, so it is returned unclaimed instead
  // of taken over, as on PostgreSQL. Were it ever committed still in_progress (the guard never
  // does), the next arrival takes it over once that lease has passed.
  const ClaimParams params{scope,
                           fingerprint,
                           owner,
                           now,
                           now + kTransactionLease.count(),
                           now + std::max(retention_, kTransactionLease).count()};
  if (!borrowed_) {
    absl::StatusOr<std::optional<ClaimResult>> fresh = claims_.ClaimNewKey(*lease_, params);
    IDEM_RETURN_IF_ERROR(Track(fresh.status()));
    if (fresh->has_value()) return **std::move(fresh);
  }
  // A key with a record (or any key, borrowed): a fence drawn from the counter and counted.
  absl::StatusOr<ClaimResult> claim =
      ClaimKey(*lease_, params, /*take_over_lapsed=*/true, claims_.MinFence());
  IDEM_RETURN_IF_ERROR(Track(claim.status()));
  if (claim->claimed) claims_.NoteFence(claim->record.fence);
  return claim;
}

absl::Status SqliteTransaction::Finish(const Scope& scope, int64_t fence, KeyState state,
                                       const StoredResponse& response) {
  IDEM_RETURN_IF_ERROR(Gate("finishing a key"));
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  if (state != KeyState::kCompleted && state != KeyState::kFailedFinal) {
    return absl::InvalidArgumentError(
        "Finish records kCompleted or kFailedFinal; to give the key up, roll back instead");
  }
  const int64_t now = clock_.NowMillis();
  const int64_t expires = now + retention_.count();
  absl::StatusOr<std::optional<int64_t>> own =
      claims_.Finish(*lease_, scope, fence, state, response, now, expires);
  // An unwritten claim of another fence: nothing was run, so no statement failed.
  if (!own.ok() && absl::IsAborted(own.status())) return own.status();
  IDEM_RETURN_IF_ERROR(Track(own.status()));
  absl::StatusOr<int64_t> changed =
      own->has_value() ? **own : RecordOutcome(*lease_, scope, fence, state, response, now, expires);
  IDEM_RETURN_IF_ERROR(Track(changed.status()));
  if (*changed == 1) return absl::OkStatus();
  return StaleFenceError(*lease_, scope, fence, now, "recording the outcome");
}

absl::Status SqliteTransaction::RunSavepointCommand(std::string_view verb, std::string_view name) {
  // Rolling back to a savepoint is what a failed transaction is good for.
  IDEM_RETURN_IF_ERROR(Gate(verb, /*after_failure_ok=*/verb.starts_with("ROLLBACK")));
  if (!IsSqlIdentifier(name)) {
    return absl::InvalidArgumentError(fmt::format(
        "savepoint name '{}' is not an identifier: use letters, digits and '_' (1-63, not "
        "starting with a digit)",
        name));
  }
  // Built on the stack (the verb is at most 21 bytes, the name 63): the cached statement is
  // found by its text without allocating.
  std::array<char, 96> sql;
  char* end = std::copy(verb.begin(), verb.end(), sql.data());
  *end++ = ' ';
  end = std::copy(name.begin(), name.end(), end);
  // A failed savepoint statement leaves the transaction holding an unknown part of the work:
  // doomed.
  IDEM_RETURN_IF_ERROR(
      Track(lease_->Run(std::string_view(sql.data(), static_cast<size_t>(end - sql.data()))),
            /*dooming=*/true));
  if (verb.starts_with("SAVEPOINT")) {
    claims_.OnSavepoint(name);
  } else if (verb.starts_with("RELEASE")) {
    claims_.OnRelease(name);
  } else {
    failed_ = false;
    IDEM_RETURN_IF_ERROR(Track(claims_.OnRollbackTo(*lease_, name), /*dooming=*/true));
  }
  return absl::OkStatus();
}

absl::Status SqliteTransaction::Savepoint(std::string_view name) {
  return RunSavepointCommand("SAVEPOINT", name);
}

absl::Status SqliteTransaction::RollbackToSavepoint(std::string_view name) {
  return RunSavepointCommand("ROLLBACK TO SAVEPOINT", name);
}

absl::Status SqliteTransaction::ReleaseSavepoint(std::string_view name) {
  return RunSavepointCommand("RELEASE SAVEPOINT", name);
}

absl::Status SqliteTransaction::Commit() {
  if (borrowed_) return BorrowedTransactionEndRefused("commit", "sqlite3");
  if (absl::Status gate = Gate("committing"); !gate.ok()) {
    Rollback().IgnoreError();
    return gate;
  }
  // Unfinished claims become in_progress records, their fences counted.
  if (absl::Status ready = Track(claims_.BeforeCommit(*lease_), /*dooming=*/true); !ready.ok()) {
    Rollback().IgnoreError();
    return ready;
  }
  ending_ = true;
  absl::Status status = lease_->Run("COMMIT");
  ending_ = false;
  if (status.ok()) {
    End();
    return status;
  }
  const bool busy = absl::IsUnavailable(status) && lease_->InTransaction();
  Doom(absl::UnavailableError(
      busy ? fmt::format("commit failed, nothing was committed; retry the whole transaction ({})",
                         std::string(status.message()))
           : fmt::format("commit failed and its outcome is unknown ({}): it may have been made "
                         "durable; look the key up, or retry with the same key",
                         std::string(status.message()))));
  Rollback().IgnoreError();
  return doomed_;
}

absl::Status SqliteTransaction::Rollback() {
  if (borrowed_) return BorrowedTransactionEndRefused("rollback", "sqlite3");
  if (!open_) return absl::OkStatus();
  ending_ = true;
  absl::Status status = lease_->InTransaction() ? lease_->Run("ROLLBACK") : absl::OkStatus();
  ending_ = false;
  End();
  return status;
}

}  // namespace idem::sqlite
