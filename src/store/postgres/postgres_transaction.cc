#include "store/postgres/postgres_transaction.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "common/status_macros.h"
#include "core/transaction_control.h"
#include "idem/key.h"
#include "store/postgres/pg_error.h"
#include "store/postgres/pg_key_table.h"

namespace idem::postgres {
namespace {

// How long a claim made in a transaction holds should its transaction ever commit it unfinished
// (the guard never does): the default lease of lease mode.
const Millis kTransactionLease = ClaimRequest{}.lease;

// Names are sent quoted ("inner", "select" are keywords), always, so they match each other.
absl::Status CheckSavepointName(std::string_view name) {
  const bool ok = !name.empty() && name.size() <= 63 &&
                  (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                  });
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "savepoint name '{}' is not a plain identifier: use 1-63 letters, digits and underscores, "
      "not starting with a digit",
      name));
}

// true for SQL that may change a session setting: SET, RESET, set_config(), or any mention of
// a timeout. Over-matching only costs a few SET LOCAL statements later.
bool MayChangeSettings(std::string_view sql) {
  std::string lower(sql.substr(0, 4096));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const size_t start = lower.find_first_not_of(" \t\r\n(");
  const std::string_view text =
      start == std::string::npos ? "" : std::string_view(lower).substr(start);
  return text.starts_with("set") || text.starts_with("reset") ||
         lower.find("set_config") != std::string::npos ||
         lower.find("timeout") != std::string::npos || sql.size() > 4096;
}

// true for SQL that may write idem_keys (it names an idem_ table, any case) or undo a claim (a
// rollback to the caller's own savepoint): the claims' outcomes are then sent when recorded.
bool MayTouchClaims(std::string_view sql) {
  constexpr std::string_view kPrefix = "idem_";
  const auto found =
      std::search(sql.begin(), sql.end(), kPrefix.begin(), kPrefix.end(),
                  [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
  return found != sql.end() || IsRollbackToSavepoint(sql);
}

}  // namespace

PostgresTransaction::PostgresTransaction(PooledConnection conn, const StoreOptions& options,
                                         Clock& clock)
    : conn_(std::move(conn)), options_(options), clock_(clock) {
  DeferBegin(**conn_);
}

void PostgresTransaction::DeferBegin(PgConnection& c) {
  c.Defer("BEGIN");
  // Every connection starts with the timeouts as session settings; only where the caller's SQL may
  // have changed one are they set again, for this transaction, at no extra round trip.
  if (c.caller_touched()) {
    c.Defer(fmt::format("SET LOCAL statement_timeout = {}", options_.statement_timeout.count()));
    c.Defer(fmt::format("SET LOCAL lock_timeout = {}", options_.lock_timeout.count()));
    c.Defer(fmt::format("SET LOCAL idle_in_transaction_session_timeout = {}",
                        options_.statement_timeout.count()));
  }
}

PostgresTransaction::PostgresTransaction(Borrowed, PooledConnection conn,
                                         const StoreOptions& options, Clock& clock)
    : conn_(std::move(conn)), options_(options), clock_(clock), sent_(true), borrowed_(true) {}

PostgresTransaction::~PostgresTransaction() {
  // A borrowed transaction defers nothing (see SendSavepointStatement): its owner's transaction
  // is left exactly as idem's last statement left it.
  if (!borrowed_) Rollback().IgnoreError();
}

absl::StatusOr<PgConnection*> PostgresTransaction::Open(bool sending, bool rolling_back) {
  if (!conn_.has_value()) {
    return absl::InternalError(
        "the transaction already ended (committed or rolled back): Begin() a new one");
  }
  if (!doomed_.ok()) return doomed_;
  PgConnection& conn = **conn_;
  if (sent_) {
    const PGTransactionStatusType state = PQtransactionStatus(conn.raw());
    if (state == PQTRANS_IDLE && borrowed_) {
      Doom(BorrowedTransactionEnded("PostgreSQL"));
    } else if (state == PQTRANS_IDLE) {
      Doom(absl::InternalError(
          "the transaction was committed or rolled back outside the store (through "
          "native_handle()?): what it held so far may have been committed; roll back, and never "
          "end the store's transaction yourself"));
    } else if (state == PQTRANS_UNKNOWN) {
      Doom(absl::UnavailableError(
          "lost the connection to PostgreSQL; nothing of the transaction was kept: retry"));
    } else if (state == PQTRANS_INERROR && borrowed_ && !left_in_error_ && !rolling_back) {
      // Not by a statement of idem's: one the owner (or an effect) ran on the connection itself.
      Doom(absl::UnavailableError(
          "PostgreSQL aborted your transaction after idem's last statement (a statement run on "
          "your connection outside idem failed), so it refuses every statement until ROLLBACK "
          "(SQLSTATE 25P02); nothing more of idem's was run: roll the transaction back (whole, or "
          "to a savepoint taken before that statement) and retry"));
    }
    if (!doomed_.ok()) return doomed_;
  }
  sent_ = sent_ || sending;
  return &conn;
}

absl::Status PostgresTransaction::OutcomeNotRecorded(absl::Status status) const {
  // Only a deferred outcome fails with this SQLSTATE among the deferred statements (the others
  // are BEGIN, SET LOCAL and savepoint statements).
  const std::string code = fmt::format("(SQLSTATE {})", kOutcomeNotRecorded);
  if (status.ok() || !conn_.has_value() || !(**conn_).failed_deferred() ||
      status.message().find(code) == absl::string_view::npos) {
    return status;
  }
  return absl::AbortedError(fmt::format(
      "{}: the key's record changed inside this transaction after its claim (through the "
      "transaction's own SQL?), so its outcome was not recorded and the transaction cannot "
      "commit; do not record an outcome",
      std::string(status.message())));
}

void PostgresTransaction::Doom(absl::Status why) {
  if (doomed_.ok()) doomed_ = std::move(why);
}

absl::Status PostgresTransaction::Track(absl::Status status, bool dooming) {
  if (borrowed_ && conn_.has_value()) {
    left_in_error_ = PQtransactionStatus((**conn_).raw()) == PQTRANS_INERROR;
  }
  if (status.ok()) return status;
  status = OutcomeNotRecorded(std::move(status));
  const bool deferred_failed = conn_.has_value() && (**conn_).failed_deferred();
  if (borrowed_ && conn_.has_value() && PQtransactionStatus((**conn_).raw()) == PQTRANS_INERROR) {
    // The owner's own statements on its connection fail from now on too: tell it why.
    status = absl::Status(status.code(),
                          fmt::format("{}; PostgreSQL has aborted your transaction: roll it back "
                                      "(whole, or to a savepoint taken before this statement)",
                                      std::string(status.message())));
  }
  if (dooming || deferred_failed || absl::IsUnavailable(status)) Doom(status);
  return status;
}

absl::StatusOr<Result> PostgresTransaction::Run(std::string_view sql,
                                                std::span<const SqlValue> params,
                                                std::string_view what) {
  if (IsTransactionControl(sql)) {
    return absl::InvalidArgumentError(fmt::format(
        "the SQL would begin, commit or roll back the transaction, or touch the store's own "
        "savepoints (idem_*); the store does that (use your own savepoints for partial undo); "
        "not run (in: {})",
        sql));
  }
  IDEM_ASSIGN_OR_RETURN(PgConnection * conn, Open());
  if (MayChangeSettings(sql)) conn->MarkCallerTouched();
  if (MayTouchClaims(sql)) ForgetClaims();
  absl::StatusOr<Result> result = conn->Run(sql, params, what);
  IDEM_RETURN_IF_ERROR(Track(result.status()));
  return result;
}

absl::StatusOr<std::vector<SqlRow>> PostgresTransaction::Query(std::string_view sql,
                                                               std::span<const SqlValue> params) {
  IDEM_ASSIGN_OR_RETURN(Result result, Run(sql, params, "query"));
  return DecodeRows(result.get());
}

absl::StatusOr<int64_t> PostgresTransaction::Execute(std::string_view sql,
                                                     std::span<const SqlValue> params) {
  IDEM_ASSIGN_OR_RETURN(Result result, Run(sql, params, "statement"));
  // Only writes change rows; a SELECT's count is of rows read.
  const std::string_view tag = PQcmdStatus(result.get());
  const bool write = tag.starts_with("INSERT") || tag.starts_with("UPDATE") ||
                     tag.starts_with("DELETE") || tag.starts_with("MERGE");
  return write ? std::strtoll(PQcmdTuples(result.get()), nullptr, 10) : 0;
}

void* PostgresTransaction::native_handle() {
  if (!conn_.has_value()) return nullptr;
  PgConnection& conn = **conn_;
  conn.MarkCallerTouched();
  handle_taken_ = true;  // the caller may write anything, any time: no outcome waits from now on
  ForgetClaims();
  if (conn.has_deferred()) {
    // The caller's statements must land inside the transaction: send BEGIN now. A failure shows
    // on the caller's next statement and at Commit.
    sent_ = true;
    conn.Run("SELECT 1", {}, "starting the transaction").IgnoreError();
  }
  return conn.raw();
}

absl::StatusOr<ClaimResult> PostgresTransaction::Claim(const Scope& scope,
                                                       std::string_view fingerprint,
                                                       std::string_view owner) {
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  IDEM_ASSIGN_OR_RETURN(PgConnection * conn, Open());
  const int64_t now = clock_.NowMillis();
  ClaimParams p{scope,
                std::string(fingerprint),
                std::string(owner),
                now,
                now + kTransactionLease.count(),
                now + std::max(options_.retention, kTransactionLease).count()};
  absl::StatusOr<ClaimResult> claim = ClaimKey(*conn, p, /*take_over_lapsed=*/true);
  IDEM_RETURN_IF_ERROR(Track(claim.status()));
  if (claim->claimed && !borrowed_ && !handle_taken_) {
    claims_.push_back({scope, claim->record.fence, claim->record.expires_ms});
  }
  return claim;
}

absl::Status PostgresTransaction::Finish(const Scope& scope, int64_t fence, KeyState state,
                                         const StoredResponse& response) {
  if (state == KeyState::kInProgress) {
    return absl::InvalidArgumentError(
        "Finish records a final state: pass kCompleted or kFailedFinal");
  }
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  IDEM_ASSIGN_OR_RETURN(PgConnection * conn, Open());
  const int64_t now = clock_.NowMillis();
  const auto held = std::find_if(claims_.begin(), claims_.end(), [&](const HeldClaim& c) {
    return c.scope == scope && c.fence == fence;
  });
  if (held != claims_.end()) {
    // The claim's row is locked by this transaction and untouched since: the UPDATE below would
    // change it unless the record expired by now or the transaction failed, both seen here.
    const bool untouched =
        now < held->expires_ms && PQtransactionStatus(conn->raw()) == PQTRANS_INTRANS;
    claims_.erase(held);  // finished: a second outcome of the key is sent and refused at once
    if (untouched) {
      conn->Defer(RecordOutcomeCheckedStatement(scope, fence, state, response, now,
                                                now + options_.retention.count()));
      return absl::OkStatus();
    }
  }
  absl::StatusOr<int64_t> changed =
      RecordOutcome(*conn, scope, fence, state, response, now, now + options_.retention.count());
  IDEM_RETURN_IF_ERROR(Track(changed.status()));
  if (*changed == 1) return absl::OkStatus();
  return StaleFenceError(*conn, scope, fence, now, "outcome");
}

absl::StatusOr<size_t> PostgresTransaction::FindSavepoint(std::string_view name) const {
  for (size_t i = savepoints_.size(); i > 0; --i) {
    if (savepoints_[i - 1].name == name) return i - 1;
  }
  return absl::InvalidArgumentError(
      fmt::format("there is no savepoint '{}' in this transaction (or it was released)", name));
}

absl::Status PostgresTransaction::SendSavepointStatement(PgConnection& conn, std::string sql) {
  if (!borrowed_) {
    conn.Defer(std::move(sql));
    return absl::OkStatus();
  }
  // The owner's connection: its own statements, and an effect's written on it, go to the server
  // straight away, so a savepoint must be there before control returns (else the effect's write
  // lands outside the guard's savepoint), and a RELEASE must not outlive the call (else it meets
  // the owner's later savepoints: releases one of them, or finds its own already gone).
  return Track(conn.Run(sql, {}, "savepoint").status(), /*dooming=*/true);
}

absl::Status PostgresTransaction::Savepoint(std::string_view name) {
  IDEM_RETURN_IF_ERROR(CheckSavepointName(name));
  IDEM_ASSIGN_OR_RETURN(PgConnection * conn, Open(/*sending=*/false));
  if (sent_)
    IDEM_RETURN_IF_ERROR(SendSavepointStatement(*conn, fmt::format("SAVEPOINT \"{}\"", name)));
  savepoints_.push_back({std::string(name), sent_});
  return absl::OkStatus();
}

absl::Status PostgresTransaction::RollbackToSavepoint(std::string_view name) {
  IDEM_RETURN_IF_ERROR(CheckSavepointName(name));
  IDEM_ASSIGN_OR_RETURN(PgConnection * conn, Open(/*sending=*/false, /*rolling_back=*/true));
  IDEM_ASSIGN_OR_RETURN(size_t index, FindSavepoint(name));
  savepoints_.resize(index + 1);  // the later ones are gone; this one stays
  ForgetClaims();                 // some may be undone
  if (savepoints_[index].on_server) {
    // Sent at once: it is what makes a failed transaction usable again.
    sent_ = true;
    return Track(
        conn->Run(fmt::format("ROLLBACK TO SAVEPOINT \"{}\"", name), {}, "rollback to savepoint")
            .status(),
        /*dooming=*/true);
  }
  // Nothing was sent before this savepoint: undoing everything since is starting afresh.
  conn->DropDeferred();
  if (sent_) {
    Result result(PQexec(conn->raw(), "ROLLBACK"));
    absl::Status status = StatusFromResult(result.get(), conn->raw(), "rollback to savepoint");
    if (!status.ok()) {
      conn->MarkBroken();
      Doom(status);
      return status;
    }
  }
  sent_ = false;
  DeferBegin(*conn);
  return absl::OkStatus();
}

absl::Status PostgresTransaction::ReleaseSavepoint(std::string_view name) {
  IDEM_RETURN_IF_ERROR(CheckSavepointName(name));
  IDEM_ASSIGN_OR_RETURN(PgConnection * conn, Open(/*sending=*/false));
  IDEM_ASSIGN_OR_RETURN(size_t index, FindSavepoint(name));
  // Releasing a savepoint releases every later one too; on the server, releasing the lowest of
  // them that is there does it. RELEASE names the topmost savepoint of that name, so a name
  // repeated above is released once per repetition.
  for (size_t i = index; i < savepoints_.size(); ++i) {
    if (!savepoints_[i].on_server) continue;
    const std::string lowest = savepoints_[i].name;  // a copy: the entries go below
    const auto repeats =
        std::count_if(savepoints_.begin() + static_cast<ptrdiff_t>(i), savepoints_.end(),
                      [&](const SavepointEntry& e) { return e.name == lowest; });
    savepoints_.resize(index);
    for (ptrdiff_t r = 0; r < repeats; ++r) {
      IDEM_RETURN_IF_ERROR(
          SendSavepointStatement(*conn, fmt::format("RELEASE SAVEPOINT \"{}\"", lowest)));
    }
    return absl::OkStatus();
  }
  savepoints_.resize(index);
  return absl::OkStatus();
}

absl::Status PostgresTransaction::Commit() {
  if (borrowed_) return BorrowedTransactionEndRefused("commit", "PostgreSQL");
  if (conn_.has_value() && !sent_ && doomed_.ok()) return Rollback();  // nothing was written
  absl::StatusOr<PgConnection*> open = Open();
  if (!open.ok()) {
    Rollback().IgnoreError();
    return open.status();
  }
  PgConnection* conn = *open;
  conn->DropDeferredReleases();  // COMMIT releases every savepoint itself
  // A deferred outcome goes out with the COMMIT, in one round trip.
  absl::StatusOr<Result> result = conn->Run("COMMIT", {}, "commit");
  absl::Status status = OutcomeNotRecorded(result.status());
  if (result.ok() && std::string_view(PQcmdStatus(result->get())) != "COMMIT") {
    // The server answers COMMIT of a failed transaction with ROLLBACK.
    status = absl::InternalError(
        "commit: a statement of the transaction had failed and was not rolled back to a "
        "savepoint, so PostgreSQL rolled the transaction back; nothing was committed");
  } else if (!result.ok() && conn->lost()) {
    status = absl::UnavailableError(fmt::format(
        "commit: the connection was lost while COMMIT was under way, so the commit's outcome is "
        "unknown: it may have committed; look the key up, or retry with the same key, which "
        "replays the outcome if it did ({})",
        std::string(result.status().message())));
  }
  if (!status.ok()) {
    if (absl::IsUnavailable(status)) Doom(status);
    Rollback().IgnoreError();
    return status;
  }
  conn_.reset();
  return absl::OkStatus();
}

absl::Status PostgresTransaction::Rollback() {
  if (borrowed_) return BorrowedTransactionEndRefused("rollback", "PostgreSQL");
  if (!conn_.has_value()) return absl::OkStatus();
  PgConnection& conn = **conn_;
  conn.DropDeferred();
  savepoints_.clear();
  ForgetClaims();
  if (sent_ && !conn.broken()) {
    Result result(PQexec(conn.raw(), "ROLLBACK"));
    if (result == nullptr || PQresultStatus(result.get()) != PGRES_COMMAND_OK) conn.MarkBroken();
  }
  conn_.reset();  // back to the pool (closed instead if it is broken)
  return absl::OkStatus();
}

}  // namespace idem::postgres
