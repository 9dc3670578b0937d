#include "store/sqlite/sqlite_transaction.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <string>

#include "common/status_macros.h"
#include "store/sqlite/key_table.h"
#include "idem/key.h"

namespace idem::sqlite {
namespace {

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

// The first `count` words of `sql`, upper-cased and joined by single spaces.
std::string LeadingWords(std::string_view sql, int count) {
  std::string out;
  bool in_word = false;
  for (char c : sql) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      in_word = false;
      continue;
    }
    if (!in_word && !out.empty() && --count <= 0) break;
    if (!in_word && !out.empty()) out += ' ';
    in_word = true;
    out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

// True for BEGIN, COMMIT, END and ROLLBACK, but not ROLLBACK TO (which stays inside).
bool EndsTransaction(sqlite3_stmt* stmt) {
  const std::string lead = LeadingWords(sqlite3_sql(stmt), 3);
  const std::string first = lead.substr(0, lead.find(' '));
  if (first == "BEGIN" || first == "COMMIT" || first == "END") return true;
  if (first != "ROLLBACK") return false;
  return !lead.starts_with("ROLLBACK TO") && !lead.starts_with("ROLLBACK TRANSACTION TO");
}

// Returns N for a parameter named "$N" (N >= 1), else 0.
size_t DollarIndex(const char* name) {
  if (name == nullptr || name[0] != '$') return 0;
  const std::string_view digits(name + 1);
  size_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return 0;
  return n;
}

// Works out once what PrepareBound needs of a statement: whether it ends the transaction, and
// which $N each of its parameters is.
void Analyse(sqlite3_stmt* stmt, StatementNotes& notes) {
  notes.ends_transaction = EndsTransaction(stmt);
  const int count = sqlite3_bind_parameter_count(stmt);
  notes.dollar_of_param.assign(static_cast<size_t>(count), 0);
  std::vector<bool> used(static_cast<size_t>(count) + 1, false);
  bool all_dollar = true;
  notes.bound_dollar.assign(static_cast<size_t>(count), 0);
  for (int i = 1; i <= count; ++i) {
    const char* name = sqlite3_bind_parameter_name(stmt, i);
    const size_t n = DollarIndex(name);
    notes.dollar_of_param[static_cast<size_t>(i - 1)] = n;
    all_dollar = all_dollar && n != 0;
    notes.max_dollar = std::max(notes.max_dollar, n);
    // Values go to parameters named exactly $N: one written $01 is accepted but left NULL.
    if (n == 0 || name[1] == '0') continue;
    notes.bound_dollar[static_cast<size_t>(i - 1)] = n;
    if (n <= static_cast<size_t>(count)) used[n] = true;
  }
  if (!all_dollar) notes.max_dollar = 0;
  while (notes.dollar_prefix < static_cast<size_t>(count) && used[notes.dollar_prefix + 1]) {
    ++notes.dollar_prefix;
  }
  notes.analysed = true;
}

absl::Status BindValue(Statement& stmt, int index, const SqlValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return stmt.BindInt(index, *i);
  if (const auto* d = std::get_if<double>(&value)) return stmt.BindDouble(index, *d);
  if (const auto* s = std::get_if<std::string>(&value)) return stmt.BindText(index, *s);
  if (const auto* b = std::get_if<Blob>(&value)) return stmt.BindBlob(index, b->bytes);
  return stmt.BindNull(index);
}

SqlValue ColumnValue(const Statement& stmt, int col) {
  switch (stmt.ColumnType(col)) {
    case SQLITE_INTEGER:
      return stmt.ColumnInt(col);
    case SQLITE_FLOAT:
      return stmt.ColumnDouble(col);
    case SQLITE_TEXT:
      return stmt.ColumnBytes(col);
    case SQLITE_BLOB:
      return Blob{stmt.ColumnBytes(col)};
    default:
      return std::monostate();
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteTransaction>> SqliteTransaction::Begin(
    ConnectionPool::Lease lease, const Clock& clock, Millis retention) {
  IDEM_RETURN_IF_ERROR(lease->Run("BEGIN IMMEDIATE"));
  return std::unique_ptr<SqliteTransaction>(
      new SqliteTransaction(std::move(lease), clock, retention));
}

SqliteTransaction::~SqliteTransaction() { Rollback().IgnoreError(); }

absl::Status SqliteTransaction::CheckOpen(std::string_view operation) const {
  if (open_) return absl::OkStatus();
  return absl::FailedPreconditionError(fmt::format(
      "{}: the transaction was already committed or rolled back; Begin() a new one", operation));
}

absl::StatusOr<Statement> SqliteTransaction::PrepareBound(std::string_view sql,
                                                          std::span<const SqlValue> params) {
  IDEM_RETURN_IF_ERROR(CheckOpen("running SQL"));
  IDEM_ASSIGN_OR_RETURN(Statement stmt, lease_->Prepare(sql));
  // A statement outside the connection's cache is analysed afresh every time.
  StatementNotes uncached;
  StatementNotes& notes = stmt.notes() != nullptr ? *stmt.notes() : uncached;
  if (!notes.analysed) Analyse(stmt.get(), notes);
  if (notes.ends_transaction) {
    return absl::InvalidArgumentError(fmt::format(
        "the SQL would begin, commit or roll back the transaction itself; the store does that "
        "(use Savepoint/RollbackToSavepoint for partial undo) (in: {})",
        sql));
  }
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
    IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
    if (!has_row) break;
    SqlRow row;
    row.reserve(static_cast<size_t>(stmt.ColumnCount()));
    for (int col = 0; col < stmt.ColumnCount(); ++col) row.push_back(ColumnValue(stmt, col));
    rows.push_back(std::move(row));
  }
  return rows;
}

absl::StatusOr<int64_t> SqliteTransaction::Execute(std::string_view sql,
                                                   std::span<const SqlValue> params) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt, PrepareBound(sql, params));
  const int64_t before = sqlite3_total_changes64(lease_->db());
  while (true) {
    IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
    if (!has_row) break;
  }
  // sqlite3_changes64 reports the last INSERT/UPDATE/DELETE, which is this statement only when
  // it changed something; DDL and SELECT change nothing.
  if (sqlite3_total_changes64(lease_->db()) == before) return 0;
  return sqlite3_changes64(lease_->db());
}

void* SqliteTransaction::native_handle() { return lease_->db(); }

absl::StatusOr<ClaimResult> SqliteTransaction::Claim(const Scope& scope,
                                                     std::string_view fingerprint,
                                                     std::string_view owner) {
  IDEM_RETURN_IF_ERROR(CheckOpen("claiming a key"));
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  const int64_t now = clock_.NowMillis();
  // The claim is invisible to others until commit, so it needs no lease of its own: were it ever
  // committed still in_progress, its lease has already passed and the next arrival takes over.
  const ClaimParams params{scope, fingerprint, owner, now, now, now + retention_.count()};
  return ClaimKey(*lease_, params, /*take_over_lapsed=*/true);
}

absl::Status SqliteTransaction::Finish(const Scope& scope, int64_t fence, KeyState state,
                                       const StoredResponse& response) {
  IDEM_RETURN_IF_ERROR(CheckOpen("finishing a key"));
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  if (state != KeyState::kCompleted && state != KeyState::kFailedFinal) {
    return absl::InvalidArgumentError(
        "Finish records kCompleted or kFailedFinal; to give the key up, roll back instead");
  }
  const int64_t now = clock_.NowMillis();
  IDEM_ASSIGN_OR_RETURN(int64_t changed, RecordOutcome(*lease_, scope, fence, state, response,
                                                       now, now + retention_.count()));
  if (changed == 1) return absl::OkStatus();
  return StaleFenceError(*lease_, scope, fence, now, "recording the outcome");
}

absl::Status SqliteTransaction::RunSavepointCommand(std::string_view verb,
                                                    std::string_view name) {
  IDEM_RETURN_IF_ERROR(CheckOpen(verb));
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
  return lease_->Run(std::string_view(sql.data(), static_cast<size_t>(end - sql.data())));
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
  IDEM_RETURN_IF_ERROR(CheckOpen("committing"));
  open_ = false;
  if (!lease_->InTransaction()) {
    return absl::UnavailableError(
        "commit failed: SQLite had already rolled the transaction back after an earlier error; "
        "nothing was committed, retry the whole transaction");
  }
  absl::Status status = lease_->Run("COMMIT");
  if (status.ok()) return status;
  if (lease_->InTransaction()) lease_->Run("ROLLBACK").IgnoreError();
  return absl::UnavailableError(fmt::format(
      "commit failed, nothing was committed; retry the whole transaction ({})",
      std::string(status.message())));
}

absl::Status SqliteTransaction::Rollback() {
  if (!open_) return absl::OkStatus();
  open_ = false;
  if (!lease_->InTransaction()) return absl::OkStatus();
  return lease_->Run("ROLLBACK");
}

}  // namespace idem::sqlite
