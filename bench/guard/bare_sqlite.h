// The baseline the guard is measured against: the same SQL the guard's work comes down to,
// written by hand directly against sqlite3 with prepared statements, and nothing else.
//
//   BEGIN IMMEDIATE; INSERT the claim (ON CONFLICT DO NOTHING); INSERT the effect;
//   UPDATE the claim to its outcome; COMMIT
//
// The key table has the same columns, primary key and index as the SQLite store's idem_keys, so
// SQLite does the same page work for both. Not thread-safe; one per benchmark run.
#ifndef IDEM_BENCH_GUARD_BARE_SQLITE_H_
#define IDEM_BENCH_GUARD_BARE_SQLITE_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace idem::bench {

class BareSqlite final {
 public:
  // Opens (creating) the database at `path` in WAL mode with synchronous FULL or NORMAL.
  // Returns an empty string on success, else what went wrong.
  std::string Open(const std::string& path, bool synchronous_full);
  BareSqlite() = default;
  BareSqlite(const BareSqlite&) = delete;
  BareSqlite& operator=(const BareSqlite&) = delete;
  ~BareSqlite();

  // Each returns false on a SQLite error (see error()).
  bool Begin();
  bool Commit();
  // The three statements of one operation, kept apart so that a profile shows each one's cost.
  // Claim fails when the key was already claimed.
  bool Claim(std::string_view key, std::string_view fingerprint, int64_t now_ms);
  bool Effect(std::string_view key, int64_t amount);
  bool RecordOutcome(std::string_view key, int64_t now_ms);
  // SAVEPOINT effect / RELEASE SAVEPOINT effect, prepared once.
  bool Savepoint();
  bool ReleaseSavepoint();
  // SAVEPOINT op / RELEASE SAVEPOINT op around a whole operation, prepared once.
  bool OpSavepoint();
  bool ReleaseOpSavepoint();

  std::string error() const { return db_ == nullptr ? "not open" : sqlite3_errmsg(db_); }

 private:
  bool Run(sqlite3_stmt* stmt);
  bool Exec(const char* sql);
  sqlite3_stmt* Prepare(const char* sql);

  sqlite3* db_ = nullptr;
  sqlite3_stmt* begin_ = nullptr;
  sqlite3_stmt* commit_ = nullptr;
  sqlite3_stmt* claim_ = nullptr;
  sqlite3_stmt* effect_ = nullptr;
  sqlite3_stmt* outcome_ = nullptr;
  sqlite3_stmt* savepoint_ = nullptr;
  sqlite3_stmt* release_ = nullptr;
  sqlite3_stmt* op_savepoint_ = nullptr;
  sqlite3_stmt* op_release_ = nullptr;
};

}  // namespace idem::bench

#endif  // IDEM_BENCH_GUARD_BARE_SQLITE_H_
