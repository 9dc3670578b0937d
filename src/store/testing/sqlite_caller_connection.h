// Test support: the CallerFactory of SQLite (caller_connection.h). Each open_fresh makes a file in
// a directory of its own under the test temp dir and opens it with plain sqlite3_open_v2, as an
// application would (no extended result codes, its own busy timeout).
#ifndef IDEM_STORE_TESTING_SQLITE_CALLER_CONNECTION_H_
#define IDEM_STORE_TESTING_SQLITE_CALLER_CONNECTION_H_

#include <sqlite3.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "idem/borrowed_transaction.h"
#include "idem/sqlite_store.h"
#include "store/testing/caller_connection.h"

namespace idem::testing {

class SqliteCallerConnection final : public CallerConnection {
 public:
  explicit SqliteCallerConnection(sqlite3* db) : db_(db) {}
  SqliteCallerConnection(const SqliteCallerConnection&) = delete;
  SqliteCallerConnection& operator=(const SqliteCallerConnection&) = delete;
  ~SqliteCallerConnection() override { sqlite3_close_v2(db_); }

  absl::Status Exec(const std::string& sql) override {
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK) {
      return absl::OkStatus();
    }
    return absl::InternalError(sql + ": " + sqlite3_errmsg(db_));
  }

  absl::StatusOr<int64_t> QueryInt(const std::string& sql) override {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      return absl::InternalError(sql + ": " + sqlite3_errmsg(db_));
    }
    const int rc = sqlite3_step(stmt);
    const int64_t value = rc == SQLITE_ROW ? sqlite3_column_int64(stmt, 0) : 0;
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return absl::InternalError(sqlite3_errmsg(db_));
    return value;
  }

  absl::StatusOr<std::unique_ptr<StoreTransaction>> Borrow(const BorrowOptions& options) override {
    return BorrowSqliteTransaction(db_, options);
  }

  std::string begin_sql() const override { return "BEGIN IMMEDIATE"; }

 private:
  sqlite3* db_;
};

// The file of the running test's last open_fresh.
inline std::string& CurrentCallerDatabasePath() {
  static std::string path;
  return path;
}

inline absl::StatusOr<std::unique_ptr<CallerConnection>> OpenSqliteCaller(const std::string& path) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  auto conn = std::make_unique<SqliteCallerConnection>(db);
  if (rc != SQLITE_OK) return absl::InternalError(sqlite3_errmsg(db));
  sqlite3_busy_timeout(db, 30'000);
  return conn;
}

inline CallerFactory SqliteCallerFactory() {
  return CallerFactory{
      .name = "sqlite",
      .open_fresh = [](bool with_schema) -> absl::StatusOr<std::unique_ptr<CallerConnection>> {
        std::string dir = ::testing::TempDir() + "idem-caller-XXXXXX";
        if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("mkdtemp failed");
        CurrentCallerDatabasePath() = dir + "/app.db";
        if (with_schema) {
          absl::StatusOr<std::unique_ptr<Store>> store =
              OpenSqliteStore(CurrentCallerDatabasePath(), "", {});
          if (!store.ok()) return store.status();
        }
        return OpenSqliteCaller(CurrentCallerDatabasePath());
      },
      .open_again = []() { return OpenSqliteCaller(CurrentCallerDatabasePath()); },
  };
}

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_SQLITE_CALLER_CONNECTION_H_
