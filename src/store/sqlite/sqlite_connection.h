// One SQLite connection with its prepared-statement cache, and a scoped handle on one statement.
//
// Thread-safety: a Connection is used by one thread at a time (the pool hands it out); a
// Statement belongs to the thread that prepared it.
#ifndef IDEM_STORE_SQLITE_SQLITE_CONNECTION_H_
#define IDEM_STORE_SQLITE_SQLITE_CONNECTION_H_

#include <sqlite3.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::sqlite {

struct ConnectionSettings {
  Millis lock_timeout{5000};
  bool synchronous_full = true;  // synchronous=FULL, else NORMAL
};

// What the layer above learnt about a statement's text (its $N parameters), kept beside the
// cached statement so that it is worked out once per statement
// rather than at every run. Filled in by that layer; `analysed` says whether it has been.
struct StatementNotes {
  bool analysed = false;
  std::vector<size_t> dollar_of_param;  // [i - 1]: N of parameter i written $N, else 0
  std::vector<size_t> bound_dollar;     // as dollar_of_param, 0 also for $0N: gets no value
  size_t max_dollar = 0;                // the largest N used (0 when any parameter is not $N)
  size_t dollar_prefix = 0;             // the largest K with $1..$K all used
};

// A prepared statement in use. Destroying it resets the statement and clears its bindings, so the
// cached statement is ready for the next user (and holds no read snapshot open).
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt, bool owned, StatementNotes* notes = nullptr)
      : db_(db), stmt_(stmt), owned_(owned), notes_(notes) {}
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  // Bind* take 1-based parameter indexes. Text and blobs are borrowed, not copied: they must stay
  // alive and unchanged until the Statement is destroyed. Errors: Internal (bad index).
  absl::Status BindInt(int index, int64_t value);
  absl::Status BindDouble(int index, double value);
  absl::Status BindText(int index, std::string_view text);
  absl::Status BindBlob(int index, std::string_view bytes);
  absl::Status BindNull(int index);

  // Advances the statement. Returns true when a row is available, false when it is done.
  // Errors: as FromSqlite.
  absl::StatusOr<bool> Step();

  int ColumnCount() const { return sqlite3_column_count(stmt_); }
  int ColumnType(int col) const { return sqlite3_column_type(stmt_, col); }
  int64_t ColumnInt(int col) const { return sqlite3_column_int64(stmt_, col); }
  double ColumnDouble(int col) const { return sqlite3_column_double(stmt_, col); }
  // Text and blob columns, byte for byte (NUL included).
  std::string ColumnBytes(int col) const;

  sqlite3_stmt* get() const { return stmt_; }
  // The notes kept with the cached statement; null for a statement outside the cache.
  StatementNotes* notes() const { return notes_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  bool owned_;
  StatementNotes* notes_;
};

class Connection {
 public:
  // Opens `path` (creating the file if absent) and applies the per-connection settings
  // (busy_timeout, journal_mode=WAL, synchronous). Errors: as FromSqlite.
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const std::string& path,
                                                          const ConnectionSettings& settings);
  // Opens `path` (creating an empty file if absent) without writing to it: only busy_timeout is
  // set. Configure() applies the rest.
  static absl::StatusOr<std::unique_ptr<Connection>> OpenUnconfigured(const std::string& path,
                                                                      Millis lock_timeout);
  // Sets journal_mode=WAL and synchronous. Errors: as FromSqlite; FailedPrecondition when the
  // file system cannot hold a write-ahead log.
  absl::Status Configure(const std::string& path, const ConnectionSettings& settings);
  // Wraps a connection its caller opened and keeps: destroying the Connection finalizes the
  // statements it prepared but leaves `db` open and its settings unchanged.
  // REQUIRES: `db` outlives the Connection.
  static std::unique_ptr<Connection> Borrow(sqlite3* db);

  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();

  // Runs `sql` (one or more statements, no parameters). Errors: as FromSqlite.
  absl::Status Exec(std::string_view sql);

  // Runs one statement without parameters (BEGIN, COMMIT, SAVEPOINT x, …) from the statement
  // cache, so that it is parsed once per connection rather than at every run.
  // Errors: as FromSqlite; InvalidArgument as Prepare.
  absl::Status Run(std::string_view sql);

  // Prepares one statement, from the connection's cache when it was prepared before.
  // Errors: InvalidArgument when SQLite rejects the SQL or it holds more than one statement;
  // NotFound when it names a table idem_* the database lacks (idem's schema was never applied).
  absl::StatusOr<Statement> Prepare(std::string_view sql);

  // Returns the single integer a statement such as "PRAGMA user_version" yields.
  absl::StatusOr<int64_t> QueryInt(std::string_view sql);

  // True while a transaction is open on this connection.
  bool InTransaction() const { return sqlite3_get_autocommit(db_) == 0; }

  sqlite3* db() const { return db_; }

 private:
  Connection(sqlite3* db, bool owned) : db_(db), owned_(owned) {}

  // Statements idem's own code and callers' repeated SQL use; bounded so that ad-hoc SQL cannot
  // grow it without limit.
  static constexpr size_t kMaxCachedStatements = 128;

  struct Cached {
    sqlite3_stmt* stmt;
    StatementNotes notes;
  };

  using Cache = std::map<std::string, Cached, std::less<>>;
  // A statement found before, by the address and length of the SQL text it was asked for with.
  struct Recent {
    const char* data = nullptr;
    size_t size = 0;
    Cache::iterator it;
  };
  static constexpr size_t kRecentSlots = 16;

  // The cache entry for `sql`, or cache_.end(). idem's own SQL is string literals, so most
  // lookups are answered by recent_ with one comparison of the text instead of a walk of cache_.
  Cache::iterator Find(std::string_view sql);

  sqlite3* db_;
  const bool owned_;  // false: borrowed (Borrow), closed by its owner
  Cache cache_;       // entries are never erased before the connection closes
  std::array<Recent, kRecentSlots> recent_{};
};

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_SQLITE_CONNECTION_H_
