// The WAL-coalescing VFS: a commit's frames reach the file in one write, and what readers,
// reopened connections and a failed write see is what the default VFS gives.
#include "store/sqlite/wal_coalescing_vfs.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <memory>
#include <string>

#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {
namespace {

std::string NewDbPath() {
  std::string pattern = ::testing::TempDir() + "idem-wal-vfs-XXXXXX";
  const char* dir = mkdtemp(pattern.data());
  return dir == nullptr ? std::string() : std::string(dir) + "/t.db";
}

std::unique_ptr<Connection> OpenOrDie(const std::string& path, bool synchronous_full) {
  absl::StatusOr<std::unique_ptr<Connection>> conn =
      Connection::Open(path, {.synchronous_full = synchronous_full});
  EXPECT_TRUE(conn.ok()) << conn.status();
  return conn.ok() ? *std::move(conn) : nullptr;
}

// OpenOrDie on a new database, with the table t of blobs the tests write; nullptr on failure.
std::unique_ptr<Connection> OpenWithTable(const std::string& path, bool synchronous_full) {
  std::unique_ptr<Connection> conn = OpenOrDie(path, synchronous_full);
  if (conn == nullptr) return nullptr;
  absl::Status created = conn->Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)");
  EXPECT_TRUE(created.ok()) << created;
  return created.ok() ? std::move(conn) : nullptr;
}

// A connection through the default VFS, as another program would open the file.
class PlainConnection {
 public:
  explicit PlainConnection(const std::string& path) {
    sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr);
  }
  ~PlainConnection() { sqlite3_close_v2(db_); }
  PlainConnection(const PlainConnection&) = delete;
  PlainConnection& operator=(const PlainConnection&) = delete;

  int64_t Int(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    int64_t value = -1;
    if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      value = sqlite3_column_int64(stmt, 0);
    }
    sqlite3_finalize(stmt);
    return value;
  }
  int Exec(const char* sql) { return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr); }
  // true when PRAGMA integrity_check answers its single "ok".
  bool IntegrityOk() {
    return Int("SELECT count(*) FROM pragma_integrity_check WHERE integrity_check = 'ok'") == 1;
  }

 private:
  sqlite3* db_ = nullptr;
};

absl::Status InsertRows(Connection& conn, int rows) {
  for (int i = 0; i < rows; ++i) {
    absl::Status status = conn.Exec("INSERT INTO t (v) VALUES (randomblob(3000))");
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

TEST(WalCoalescingVfs, ACommitsFramesReachTheWalInOneWrite) {
  const std::string path = NewDbPath();
  std::unique_ptr<Connection> conn = OpenWithTable(path, /*synchronous_full=*/true);
  ASSERT_NE(conn, nullptr);

  const WalWriteCounts before = WalWriteCountsSoFar();
  ASSERT_TRUE(conn->Exec("BEGIN IMMEDIATE").ok());
  ASSERT_TRUE(InsertRows(*conn, 10).ok());
  ASSERT_TRUE(conn->Exec("COMMIT").ok());
  const WalWriteCounts after = WalWriteCountsSoFar();

  // Ten pages of rows at least, each frame a header and a page: 20 writes asked, one issued.
  EXPECT_GE(after.asked - before.asked, 20u);
  EXPECT_EQ(after.issued - before.issued, 1u);
}

TEST(WalCoalescingVfs, NormalSynchronousWritesEachFrameThrough) {
  const std::string path = NewDbPath();
  std::unique_ptr<Connection> conn = OpenWithTable(path, /*synchronous_full=*/false);
  ASSERT_NE(conn, nullptr);

  const WalWriteCounts before = WalWriteCountsSoFar();
  ASSERT_TRUE(InsertRows(*conn, 5).ok());
  const WalWriteCounts after = WalWriteCountsSoFar();

  // Nothing is held back: a commit that does not sync has no point to report a failed run at.
  EXPECT_EQ(after.asked, before.asked);
  EXPECT_EQ(after.issued, before.issued);
}

TEST(WalCoalescingVfs, OtherConnectionsReadEveryCommitAcrossCheckpointsAndReopens) {
  const std::string path = NewDbPath();
  std::unique_ptr<Connection> conn = OpenWithTable(path, /*synchronous_full=*/true);
  ASSERT_NE(conn, nullptr);
  // A small WAL so that it restarts from its start many times during the test.
  ASSERT_TRUE(conn->Exec("PRAGMA wal_autocheckpoint=20").ok());
  PlainConnection reader(path);

  int64_t rows = 0;
  for (int commit = 0; commit < 60; ++commit) {
    // Commits of 1 to 120 pages: the largest spans several runs.
    const int n = 1 + (commit * 37) % 120;
    ASSERT_TRUE(conn->Exec("BEGIN IMMEDIATE").ok());
    ASSERT_TRUE(InsertRows(*conn, n).ok());
    absl::Status committed = conn->Exec("COMMIT");
    ASSERT_TRUE(committed.ok()) << committed << " at commit " << commit;
    rows += n;
    ASSERT_EQ(reader.Int("SELECT count(*) FROM t WHERE length(v) = 3000"), rows) << commit;
  }
  conn.reset();
  PlainConnection reopened(path);
  EXPECT_EQ(reopened.Int("SELECT count(*) FROM t"), rows);
  EXPECT_TRUE(reopened.IntegrityOk());
}

// A transaction larger than its page cache writes (spills) frames before its commit; rolled
// back, those frames must not land on top of what another connection commits next.
TEST(WalCoalescingVfs, RolledBackSpilledFramesNeverOverwriteALaterCommit) {
  const std::string path = NewDbPath();
  std::unique_ptr<Connection> conn = OpenWithTable(path, /*synchronous_full=*/true);
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(conn->Exec("PRAGMA cache_size=10").ok());
  PlainConnection other(path);

  for (int round = 0; round < 5; ++round) {
    ASSERT_TRUE(conn->Exec("BEGIN IMMEDIATE").ok());
    ASSERT_TRUE(InsertRows(*conn, 40).ok());
    ASSERT_TRUE(conn->Exec("ROLLBACK").ok());
    ASSERT_EQ(other.Exec("INSERT INTO t (v) VALUES (randomblob(3000))"), SQLITE_OK);
    ASSERT_EQ(conn->QueryInt("SELECT count(*) FROM t").value_or(-1), round + 1);
  }
  conn.reset();
  EXPECT_EQ(other.Int("SELECT count(*) FROM t"), 5);
  EXPECT_TRUE(other.IntegrityOk());
}

// A file size limit makes the WAL's writes fail (EFBIG), as a full disk would.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit limit = old_;
    limit.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &limit);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, SIG_DFL);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
};

TEST(WalCoalescingVfs, AFailedRunFailsItsCommitAndNothingOfItIsCommitted) {
  const std::string path = NewDbPath();
  std::unique_ptr<Connection> conn = OpenWithTable(path, /*synchronous_full=*/true);
  ASSERT_NE(conn, nullptr);
  ASSERT_TRUE(InsertRows(*conn, 1).ok());
  {
    // The WAL holds a few pages now; a commit of 50 more cannot fit under 200 KiB.
    FileSizeLimit limit(200 * 1024);
    ASSERT_TRUE(conn->Exec("BEGIN IMMEDIATE").ok());
    ASSERT_TRUE(InsertRows(*conn, 50).ok());
    EXPECT_FALSE(conn->Exec("COMMIT").ok());
    if (conn->InTransaction()) {
      ASSERT_TRUE(conn->Exec("ROLLBACK").ok());
    }
  }
  ASSERT_TRUE(InsertRows(*conn, 2).ok());
  EXPECT_EQ(conn->QueryInt("SELECT count(*) FROM t").value_or(-1), 3);
  conn.reset();
  PlainConnection reopened(path);
  EXPECT_EQ(reopened.Int("SELECT count(*) FROM t"), 3);
  EXPECT_TRUE(reopened.IntegrityOk());
}

}  // namespace
}  // namespace idem::sqlite
