#include "bare_sqlite.h"

namespace idem::bench {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS bare_keys ("
    " tenant TEXT NOT NULL, key TEXT NOT NULL, fingerprint TEXT NOT NULL,"
    " state TEXT NOT NULL"
    " CHECK (state = 'in_progress' OR state = 'completed' OR state = 'failed_final'),"
    " fence INTEGER NOT NULL CHECK (fence > 0), owner TEXT NOT NULL,"
    " lease_until INTEGER NOT NULL, status INTEGER NOT NULL DEFAULT 0,"
    " headers BLOB NOT NULL DEFAULT x'', body BLOB NOT NULL DEFAULT x'',"
    " created INTEGER NOT NULL, updated INTEGER NOT NULL, expires INTEGER NOT NULL,"
    " PRIMARY KEY (tenant, key));"
    "CREATE INDEX IF NOT EXISTS bare_keys_expires ON bare_keys (expires);"
    "CREATE TABLE IF NOT EXISTS bench_effects (op_key TEXT NOT NULL, amount INTEGER NOT NULL);";

constexpr int64_t kRetentionMs = 24 * 3600 * 1000;
constexpr std::string_view kTenant = "bench";
constexpr std::string_view kHeaders = "content-type\napplication/json\n";
constexpr std::string_view kBody = R"({"ok":true})";

void BindText(sqlite3_stmt* stmt, int index, std::string_view text) {
  sqlite3_bind_text(stmt, index, text.data(), static_cast<int>(text.size()), SQLITE_STATIC);
}

}  // namespace

std::string BareSqlite::Open(const std::string& path, bool synchronous_full) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    return error();
  }
  sqlite3_busy_timeout(db_, 5000);
  if (!Exec("PRAGMA journal_mode=WAL") ||
      !Exec(synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL") ||
      !Exec(kSchema)) {
    return error();
  }
  begin_ = Prepare("BEGIN IMMEDIATE");
  commit_ = Prepare("COMMIT");
  claim_ = Prepare(
      "INSERT INTO bare_keys (tenant, key, fingerprint, state, fence, owner, lease_until, "
      "created, updated, expires) VALUES (?1, ?2, ?3, 'in_progress', 1, ?4, ?5, ?5, ?5, ?6) "
      "ON CONFLICT (tenant, key) DO NOTHING");
  effect_ = Prepare("INSERT INTO bench_effects (op_key, amount) VALUES (?1, ?2)");
  outcome_ = Prepare(
      "UPDATE bare_keys SET state = 'completed', status = ?4, headers = ?5, body = ?6, "
      "updated = ?7, expires = ?8 WHERE tenant = ?1 AND key = ?2 AND fence = ?3 "
      "AND state = 'in_progress'");
  savepoint_ = Prepare("SAVEPOINT effect");
  release_ = Prepare("RELEASE SAVEPOINT effect");
  op_savepoint_ = Prepare("SAVEPOINT op");
  op_release_ = Prepare("RELEASE SAVEPOINT op");
  const bool prepared = begin_ && commit_ && claim_ && effect_ && outcome_ && savepoint_ &&
                        release_ && op_savepoint_ && op_release_;
  return prepared ? std::string() : error();
}

BareSqlite::~BareSqlite() {
  for (sqlite3_stmt* stmt : {begin_, commit_, claim_, effect_, outcome_, savepoint_, release_,
                             op_savepoint_, op_release_}) {
    sqlite3_finalize(stmt);
  }
  sqlite3_close_v2(db_);
}

sqlite3_stmt* BareSqlite::Prepare(const char* sql) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
    return nullptr;
  }
  return stmt;
}

bool BareSqlite::Exec(const char* sql) {
  return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

bool BareSqlite::Run(sqlite3_stmt* stmt) {
  const int rc = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  return rc == SQLITE_DONE;
}

bool BareSqlite::Begin() { return Run(begin_); }
bool BareSqlite::Commit() { return Run(commit_); }

bool BareSqlite::Savepoint() { return Run(savepoint_); }
bool BareSqlite::ReleaseSavepoint() { return Run(release_); }
bool BareSqlite::OpSavepoint() { return Run(op_savepoint_); }
bool BareSqlite::ReleaseOpSavepoint() { return Run(op_release_); }

bool BareSqlite::Claim(std::string_view key, std::string_view fingerprint, int64_t now_ms) {
  BindText(claim_, 1, kTenant);
  BindText(claim_, 2, key);
  BindText(claim_, 3, fingerprint);
  BindText(claim_, 4, "bare-owner");
  sqlite3_bind_int64(claim_, 5, now_ms);
  sqlite3_bind_int64(claim_, 6, now_ms + kRetentionMs);
  return Run(claim_) && sqlite3_changes(db_) == 1;
}

bool BareSqlite::Effect(std::string_view key, int64_t amount) {
  BindText(effect_, 1, key);
  sqlite3_bind_int64(effect_, 2, amount);
  return Run(effect_);
}

bool BareSqlite::RecordOutcome(std::string_view key, int64_t now_ms) {
  BindText(outcome_, 1, kTenant);
  BindText(outcome_, 2, key);
  sqlite3_bind_int64(outcome_, 3, 1);
  sqlite3_bind_int(outcome_, 4, 201);
  sqlite3_bind_blob(outcome_, 5, kHeaders.data(), static_cast<int>(kHeaders.size()), SQLITE_STATIC);
  sqlite3_bind_blob(outcome_, 6, kBody.data(), static_cast<int>(kBody.size()), SQLITE_STATIC);
  sqlite3_bind_int64(outcome_, 7, now_ms);
  sqlite3_bind_int64(outcome_, 8, now_ms + kRetentionMs);
  return Run(outcome_) && sqlite3_changes(db_) == 1;
}

}  // namespace idem::bench
