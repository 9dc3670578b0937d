#include "store/sqlite/sqlite_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "common/status_macros.h"
#include "store/sqlite/sqlite_error.h"
#include "store/sqlite/wal_coalescing_vfs.h"

namespace idem::sqlite {
namespace {

// True when `rest` (what follows the first statement) holds another statement; whitespace,
// semicolons and comments do not count.
bool HasAnotherStatement(sqlite3* db, std::string_view rest) {
  if (rest.find_first_not_of(" \t\r\n;") == std::string_view::npos) return false;
  sqlite3_stmt* next = nullptr;
  const int rc = sqlite3_prepare_v2(db, rest.data(), static_cast<int>(rest.size()), &next, nullptr);
  sqlite3_finalize(next);
  return rc != SQLITE_OK || next != nullptr;
}

}  // namespace

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      stmt_(std::exchange(other.stmt_, nullptr)),
      owned_(other.owned_),
      notes_(other.notes_) {}

Statement::~Statement() {
  if (stmt_ == nullptr) return;
  if (owned_) {
    sqlite3_finalize(stmt_);
    return;
  }
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

absl::Status Statement::BindInt(int index, int64_t value) {
  return FromSqlite(sqlite3_bind_int64(stmt_, index, value), db_, "binding a parameter");
}

absl::Status Statement::BindDouble(int index, double value) {
  return FromSqlite(sqlite3_bind_double(stmt_, index, value), db_, "binding a parameter");
}

absl::Status Statement::BindText(int index, std::string_view text) {
  return FromSqlite(
      sqlite3_bind_text64(stmt_, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8), db_,
      "binding a parameter");
}

absl::Status Statement::BindBlob(int index, std::string_view bytes) {
  // A zero-length blob bound from a null pointer would read as NULL: bind an empty blob instead.
  if (bytes.empty()) {
    return FromSqlite(sqlite3_bind_zeroblob(stmt_, index, 0), db_, "binding a parameter");
  }
  return FromSqlite(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_STATIC),
                    db_, "binding a parameter");
}

absl::Status Statement::BindNull(int index) {
  return FromSqlite(sqlite3_bind_null(stmt_, index), db_, "binding a parameter");
}

absl::StatusOr<bool> Statement::Step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return FromSqlite(rc, db_, "running a statement");
}

std::string Statement::ColumnBytes(int col) const {
  const int type = sqlite3_column_type(stmt_, col);
  const void* data =
      type == SQLITE_BLOB ? sqlite3_column_blob(stmt_, col) : sqlite3_column_text(stmt_, col);
  const int size = sqlite3_column_bytes(stmt_, col);
  if (data == nullptr || size <= 0) return std::string();
  return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::OpenUnconfigured(const std::string& path,
                                                                         Millis lock_timeout) {
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
  // The coalescing VFS writes every file as the default one does until Configure asks it to
  // coalesce; without it (it cannot wrap this platform's VFS) the default VFS is used.
  const absl::StatusOr<const char*> vfs = WalCoalescingVfsName();
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, vfs.ok() ? *vfs : nullptr);
  if (rc != SQLITE_OK) {
    absl::Status status = FromSqlite(rc, db, fmt::format("opening the SQLite database '{}'", path));
    sqlite3_close_v2(db);
    return status;
  }
  sqlite3_extended_result_codes(db, 1);
  const int64_t timeout = std::clamp<int64_t>(lock_timeout.count(), 0, 0x7fffffff);
  sqlite3_busy_timeout(db, static_cast<int>(timeout));
  return std::unique_ptr<Connection>(new Connection(db, /*owned=*/true));
}

std::unique_ptr<Connection> Connection::Borrow(sqlite3* db) {
  return std::unique_ptr<Connection>(new Connection(db, /*owned=*/false));
}

absl::Status Connection::Configure(const std::string& path, const ConnectionSettings& settings) {
  {
    IDEM_ASSIGN_OR_RETURN(Statement wal, Prepare("PRAGMA journal_mode=WAL"));
    IDEM_ASSIGN_OR_RETURN(bool has_row, wal.Step());
    const std::string mode = has_row ? wal.ColumnBytes(0) : std::string("unknown");
    if (mode != "wal") {
      return absl::FailedPreconditionError(fmt::format(
          "the SQLite database '{}' cannot use write-ahead logging (journal_mode is '{}'); put "
          "it on a local file system that supports shared memory",
          path, mode));
    }
  }
  // The bytes an outcome or a release frees (a claim's note, which may hold a request's
  // credentials) are zeroed, not left in the file's free space (docs/sqlite-store.md).
  IDEM_RETURN_IF_ERROR(Exec("PRAGMA secure_delete=ON"));
  if (!settings.synchronous_full) return Exec("PRAGMA synchronous=NORMAL");
  IDEM_RETURN_IF_ERROR(Exec("PRAGMA synchronous=FULL"));
  // Each commit then syncs the WAL before it becomes visible: its frames can go out in one write.
  CoalesceWalWrites(db_);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Connection>> Connection::Open(const std::string& path,
                                                             const ConnectionSettings& settings) {
  IDEM_ASSIGN_OR_RETURN(auto conn, OpenUnconfigured(path, settings.lock_timeout));
  IDEM_RETURN_IF_ERROR(conn->Configure(path, settings));
  return conn;
}

Connection::~Connection() {
  for (auto& [sql, cached] : cache_) sqlite3_finalize(cached.stmt);
  if (owned_) sqlite3_close_v2(db_);
}

absl::Status Connection::Exec(std::string_view sql) {
  const std::string text(sql);
  return FromSqlite(sqlite3_exec(db_, text.c_str(), nullptr, nullptr, nullptr), db_,
                    fmt::format("running '{}'", text.substr(0, 60)));
}

absl::Status Connection::Run(std::string_view sql) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  int rc = SQLITE_ROW;
  while (rc == SQLITE_ROW) rc = sqlite3_step(stmt.get());
  if (rc == SQLITE_DONE) return absl::OkStatus();
  return FromSqlite(rc, db_, fmt::format("running '{}'", sql.substr(0, 60)));
}

Connection::Cache::iterator Connection::Find(std::string_view sql) {
  const auto address = reinterpret_cast<std::uintptr_t>(sql.data());
  Recent& slot = recent_[((address >> 3) ^ sql.size()) % kRecentSlots];
  // The text is compared too: a caller's buffer may hold other SQL at the same address later.
  if (slot.data != nullptr && slot.data == sql.data() && slot.size == sql.size() &&
      slot.it->first == sql) {
    return slot.it;
  }
  const auto it = cache_.find(sql);
  if (it != cache_.end()) slot = Recent{sql.data(), sql.size(), it};
  return it;
}

absl::StatusOr<Statement> Connection::Prepare(std::string_view sql) {
  if (auto it = Find(sql); it != cache_.end()) {
    return Statement(db_, it->second.stmt, false, &it->second.notes);
  }
  sqlite3_stmt* stmt = nullptr;
  const char* tail = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, &tail);
  if (rc != SQLITE_OK) {
    absl::Status status = FromSqlite(rc, db_, "preparing SQL");
    const std::string_view message = sqlite3_errmsg(db_);
    if ((rc & 0xff) == SQLITE_ERROR && message.starts_with("no such table: idem_")) {
      // Only a database idem never opened lacks idem's tables (a caller's own connection,
      // idem/borrowed_transaction.h): say how to get them.
      // A setup error, never FailedPrecondition (a reused key's code): NotFound, as a database
      // or file that does not exist.
      status = absl::NotFoundError(
          fmt::format("the database lacks idem's schema ({}): open it once with "
                      "idem::OpenStore(\"sqlite:PATH\"), "
                      "which applies idem's migrations, before using idem on your own connection",
                      message));
    } else if ((rc & 0xff) == SQLITE_ERROR) {
      status = absl::InvalidArgumentError(
          fmt::format("SQLite rejected the SQL: {} (in: {})", message, sql));
    }
    sqlite3_finalize(stmt);
    return status;
  }
  if (stmt == nullptr) return absl::InvalidArgumentError("the SQL holds no statement");
  if (HasAnotherStatement(db_, sql.substr(static_cast<size_t>(tail - sql.data())))) {
    sqlite3_finalize(stmt);
    return absl::InvalidArgumentError(fmt::format(
        "the SQL holds more than one statement; pass one statement per call (in: {})", sql));
  }
  if (cache_.size() >= kMaxCachedStatements) return Statement(db_, stmt, true);
  const auto it = cache_.emplace(std::string(sql), Cached{stmt, {}}).first;
  return Statement(db_, stmt, false, &it->second.notes);
}

absl::StatusOr<int64_t> Connection::QueryInt(std::string_view sql) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt, Prepare(sql));
  IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
  if (!has_row) return absl::InternalError(fmt::format("'{}' returned no row", sql));
  return stmt.ColumnInt(0);
}

}  // namespace idem::sqlite
