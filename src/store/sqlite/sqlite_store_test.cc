// The SQLite store: the conformance suite over a fresh file per test, plus what only SQLite has
// (schema migrations, file checks, pragmas, the write lock).
#include "idem/sqlite_store.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "store/sqlite/sqlite_schema.h"
#include "store/testing/conformance_helpers.h"
#include "store/testing/sqlite_store_factory.h"
#include "store/testing/store_conformance.h"

namespace idem {
namespace {

using absl::StatusCode;
using idem::testing::CodeOf;
using idem::testing::MakeClaim;
using idem::testing::MakeScope;

// A directory of its own under the test temp dir, for each call.
std::string NewTempDir() {
  std::string pattern = ::testing::TempDir() + "idem-sqlite-XXXXXX";
  const char* dir = mkdtemp(pattern.data());
  return dir == nullptr ? std::string() : std::string(dir);
}

using testing::StoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest,
                         ::testing::Values(testing::SqliteStoreFactory()),
                         testing::StoreFactoryName);
using testing::StoreLostAckTest;
INSTANTIATE_TEST_SUITE_P(Sqlite, StoreLostAckTest, ::testing::Values(testing::SqliteStoreFactory()),
                         testing::StoreFactoryName);

// A raw connection to the file, standing for another program (or another idem process).
class RawDb {
 public:
  explicit RawDb(const std::string& path) { sqlite3_open(path.c_str(), &db_); }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  // Runs `sql`; returns SQLite's result code.
  int Exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  // Returns the first column of the first row as text ("" when none).
  std::string Text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0) != nullptr) {
      out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  SqliteStoreTest() : dir_(NewTempDir()), path_(dir_ + "/idem.db") {
    options_.clock = &clock_;
    options_.lock_timeout = std::chrono::milliseconds(50);
  }

  absl::StatusOr<std::unique_ptr<Store>> Open(std::string_view query = "") {
    return OpenSqliteStore(path_, query, options_);
  }

  std::string PragmaOf(Store& store, const std::string& pragma) {
    absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
    if (!tx.ok()) return "begin failed";
    absl::StatusOr<std::vector<SqlRow>> rows = (*tx)->Query("PRAGMA " + pragma);
    if (!rows.ok() || rows->empty()) return "query failed";
    const SqlValue& value = rows->front().front();
    if (const auto* i = std::get_if<int64_t>(&value)) return std::to_string(*i);
    if (const auto* s = std::get_if<std::string>(&value)) return *s;
    return "other";
  }

  ManualClock clock_;
  StoreOptions options_;
  std::string dir_;
  std::string path_;
};

TEST_F(SqliteStoreTest, OpenAppliesEveryMigrationOnceAndReopenKeepsData) {
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
    IDEM_ASSERT_OK(store->Claim(MakeClaim(MakeScope("k1"))).status());
  }
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> again, Open());
  IDEM_ASSERT_OK(again->Get(MakeScope("k1")).status());
  RawDb raw(path_);
  EXPECT_EQ(raw.Text("SELECT count(*) FROM idem_schema_migrations"),
            std::to_string(sqlite::LatestSchemaVersion()));
  EXPECT_EQ(raw.Text("SELECT max(version) FROM idem_schema_migrations"),
            std::to_string(sqlite::LatestSchemaVersion()));
}

TEST_F(SqliteStoreTest, IdemDatabaseOfAnOlderSchemaIsMigratedAtOpen) {
  ASSERT_EQ(RawDb(path_).Exec("CREATE TABLE idem_schema_migrations (version INTEGER PRIMARY KEY, "
                              "name TEXT NOT NULL, applied INTEGER NOT NULL)"),
            SQLITE_OK);
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK(store->Claim(MakeClaim(MakeScope("k1"))).status());
  EXPECT_EQ(RawDb(path_).Text("SELECT max(version) FROM idem_schema_migrations"),
            std::to_string(sqlite::LatestSchemaVersion()));
}

TEST_F(SqliteStoreTest, FailedMigrationAppliesNothing) {
  RawDb raw(path_);
  ASSERT_EQ(raw.Exec("CREATE TABLE idem_schema_migrations (version INTEGER PRIMARY KEY, "
                     "name TEXT NOT NULL, applied INTEGER NOT NULL)"),
            SQLITE_OK);
  ASSERT_EQ(raw.Exec("CREATE TABLE idem_keys (x)"), SQLITE_OK);  // migration 1 cannot create it
  EXPECT_EQ(CodeOf(Open()), StatusCode::kInternal);
  EXPECT_EQ(raw.Text("SELECT count(*) FROM idem_schema_migrations"), "0");
  EXPECT_EQ(raw.Text("SELECT count(*) FROM sqlite_schema WHERE name = 'idem_keys_expires'"), "0");
}

TEST_F(SqliteStoreTest, NewerSchemaIsFailedPreconditionNamingBothVersions) {
  { IDEM_ASSERT_OK(Open().status()); }
  ASSERT_EQ(RawDb(path_).Exec("INSERT INTO idem_schema_migrations VALUES (999, 'future', 0)"),
            SQLITE_OK);
  absl::StatusOr<std::unique_ptr<Store>> store = Open();
  EXPECT_EQ(CodeOf(store), StatusCode::kFailedPrecondition);
  const std::string message(store.status().message());
  EXPECT_NE(message.find("999"), std::string::npos) << message;
  EXPECT_NE(message.find("version " + std::to_string(sqlite::LatestSchemaVersion())),
            std::string::npos)
      << message;
}

TEST_F(SqliteStoreTest, ForeignDatabaseIsFailedPreconditionAndLeftUntouched) {
  ASSERT_EQ(RawDb(path_).Exec("CREATE TABLE invoices (id INTEGER PRIMARY KEY)"), SQLITE_OK);
  EXPECT_EQ(CodeOf(Open()), StatusCode::kFailedPrecondition);
  RawDb raw(path_);
  EXPECT_EQ(raw.Text("SELECT group_concat(name) FROM sqlite_schema WHERE type = 'table'"),
            "invoices");
  EXPECT_EQ(raw.Text("PRAGMA journal_mode"), "delete");
}

TEST_F(SqliteStoreTest, FileThatIsNotSqliteIsDataLossAndLeftUntouched) {
  const std::string garbage(8192, 'x');
  std::ofstream(path_, std::ios::binary) << garbage;
  EXPECT_EQ(CodeOf(Open()), StatusCode::kDataLoss);
  EXPECT_EQ(std::filesystem::file_size(path_), garbage.size());
}

TEST_F(SqliteStoreTest, PathInMissingDirectoryIsPermissionDenied) {
  path_ = dir_ + "/no-such-dir/idem.db";
  EXPECT_EQ(CodeOf(Open()), StatusCode::kPermissionDenied);
}

// Root may write any ordinary file, so a path under /proc stands in for a read-only place.
TEST_F(SqliteStoreTest, PathOnReadOnlyFileSystemIsPermissionDenied) {
  path_ = "/proc/idem-sqlite-store-test.db";
  EXPECT_EQ(CodeOf(Open()), StatusCode::kPermissionDenied);
}

TEST_F(SqliteStoreTest, InMemoryOrEmptyPathIsInvalidArgument) {
  EXPECT_EQ(CodeOf(OpenSqliteStore(":memory:", "", options_)), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(OpenSqliteStore("", "", options_)), StatusCode::kInvalidArgument);
}

TEST_F(SqliteStoreTest, UnknownUriQueryKeyOrValueIsInvalidArgument) {
  EXPECT_EQ(CodeOf(Open("mode=ro")), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(Open("synchronous=off")), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(Open("synchronous=normal&cache=shared")), StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(path_));
}

TEST_F(SqliteStoreTest, DatabaseIsInWalModeWithSynchronousFullByDefault) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  EXPECT_EQ(PragmaOf(*store, "journal_mode"), "wal");
  EXPECT_EQ(PragmaOf(*store, "synchronous"), "2");  // FULL
}

TEST_F(SqliteStoreTest, SynchronousIsNormalWithoutDurableCommits) {
  options_.durable_commits = false;
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  EXPECT_EQ(PragmaOf(*store, "synchronous"), "1");  // NORMAL
}

TEST_F(SqliteStoreTest, UriSynchronousWinsOverOptions) {
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open("synchronous=normal"));
    EXPECT_EQ(PragmaOf(*store, "synchronous"), "1");
  }
  options_.durable_commits = false;
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open("synchronous=full"));
  EXPECT_EQ(PragmaOf(*store, "synchronous"), "2");
}

TEST_F(SqliteStoreTest, WriteLockHeldByAnotherConnectionIsUnavailable) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  RawDb other(path_);
  ASSERT_EQ(other.Exec("BEGIN IMMEDIATE"), SQLITE_OK);
  EXPECT_EQ(CodeOf(store->Claim(MakeClaim(MakeScope("k1")))), StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(store->Begin()), StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(store->SweepExpired(10)), StatusCode::kUnavailable);
  // Readers are not blocked by a writer in WAL mode.
  EXPECT_EQ(CodeOf(store->Get(MakeScope("k1"))), StatusCode::kNotFound);
  ASSERT_EQ(other.Exec("ROLLBACK"), SQLITE_OK);
  IDEM_ASSERT_OK(store->Claim(MakeClaim(MakeScope("k1"))).status());
}

TEST_F(SqliteStoreTest, BeginBeyondMaxConnectionsIsUnavailable) {
  options_.max_connections = 1;
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  EXPECT_EQ(CodeOf(store->Get(MakeScope("k1"))), StatusCode::kUnavailable);
  IDEM_ASSERT_OK(tx->Rollback());
  tx.reset();
  EXPECT_EQ(CodeOf(store->Get(MakeScope("k1"))), StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, NativeHandleIsTheTransactionsConnection) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  auto* db = static_cast<sqlite3*>(tx->native_handle());
  ASSERT_NE(db, nullptr);
  EXPECT_EQ(sqlite3_get_autocommit(db), 0);  // inside the transaction Begin() opened
  IDEM_ASSERT_OK(tx->Rollback());
  EXPECT_EQ(sqlite3_get_autocommit(db), 1);
}

TEST_F(SqliteStoreTest, ParametersThatDoNotMatchTheSqlAreInvalidArgument) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  const SqlValue one[] = {int64_t{1}};
  const SqlValue two[] = {int64_t{1}, int64_t{2}};
  EXPECT_EQ(CodeOf(tx->Query("SELECT $1, $2", one)), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(tx->Query("SELECT $1", two)), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(tx->Query("SELECT ?", one)), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(tx->Query("SELECT :name", one)), StatusCode::kInvalidArgument);
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows, tx->Query("SELECT $2, $1", two));
  EXPECT_EQ(rows, (std::vector<SqlRow>{{int64_t{2}, int64_t{1}}}));
}

// The store works a statement's parameters out once and keeps that with the cached statement:
// the rules must hold the same on every later run of the same SQL.
TEST_F(SqliteStoreTest, ParameterRulesHoldOnEveryRunOfTheSameSql) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  const SqlValue one[] = {int64_t{7}};
  const SqlValue two[] = {int64_t{1}, int64_t{2}};
  for (int run = 0; run < 3; ++run) {
    EXPECT_EQ(CodeOf(tx->Query("SELECT $1, $2", one)), StatusCode::kInvalidArgument) << run;
    IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows, tx->Query("SELECT $1, $2", two));
    EXPECT_EQ(rows, (std::vector<SqlRow>{{int64_t{1}, int64_t{2}}})) << run;
    EXPECT_EQ(CodeOf(tx->Query("SELECT $2", two)), StatusCode::kInvalidArgument) << run;
    IDEM_ASSERT_OK_AND_ASSIGN(rows, tx->Query("SELECT $1 + $1", one));
    EXPECT_EQ(rows, (std::vector<SqlRow>{{int64_t{14}}})) << run;
    EXPECT_EQ(CodeOf(tx->Execute("COMMIT")), StatusCode::kInvalidArgument) << run;
  }
}

TEST_F(SqliteStoreTest, MoreThanOneStatementPerCallIsInvalidArgument) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  EXPECT_EQ(CodeOf(tx->Execute("SELECT 1; DELETE FROM idem_keys")), StatusCode::kInvalidArgument);
  // A rejected statement is a failed one: the transaction is good only for rolling back.
  IDEM_ASSERT_OK(tx->Rollback());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> again, store->Begin());
  IDEM_ASSERT_OK(again->Execute("SELECT 1; -- a trailing comment is fine").status());
}

TEST_F(SqliteStoreTest, SqlThatEndsTheTransactionItselfIsInvalidArgument) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  IDEM_ASSERT_OK(tx->Claim(MakeScope("k1"), "fp", "w").status());
  for (const char* sql : {"COMMIT", " commit transaction", "END", "ROLLBACK", "BEGIN"}) {
    EXPECT_EQ(CodeOf(tx->Execute(sql)), StatusCode::kInvalidArgument) << sql;
  }
  IDEM_ASSERT_OK(tx->Execute("SAVEPOINT s").status());
  IDEM_ASSERT_OK(tx->Execute("ROLLBACK TO s").status());
  IDEM_ASSERT_OK(tx->Execute("rollback transaction to savepoint s").status());
  IDEM_ASSERT_OK(tx->Rollback());
  EXPECT_EQ(CodeOf(store->Get(MakeScope("k1"))), StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, TransactionOutlivingItsStoreRollsBackSafely) {
  std::unique_ptr<StoreTransaction> tx;
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
    IDEM_ASSERT_OK_AND_ASSIGN(tx, store->Begin());
    IDEM_ASSERT_OK(tx->Claim(MakeScope("k1"), "fp", "w").status());
  }
  tx.reset();
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> again, Open());
  EXPECT_EQ(CodeOf(again->Get(MakeScope("k1"))), StatusCode::kNotFound);
}

TEST_F(SqliteStoreTest, CallsOnAFinishedTransactionAreInternal) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  IDEM_ASSERT_OK(tx->Commit());
  EXPECT_EQ(CodeOf(tx->Query("SELECT 1")), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Claim(MakeScope("k"), "f", "o")), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Commit()), StatusCode::kInternal);
}

// After SQLITE_FULL the effect's next INSERT ran in autocommit and stayed while the key was
// absent, so a retry ran the effect again; and FULL came out as Internal.
TEST_F(SqliteStoreTest, DiskFullDoomsTheTransactionAndLaterStatementsAreRefused) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> setup, store->Begin());
    IDEM_ASSERT_OK(setup->Execute("CREATE TABLE blobs (b BLOB)").status());
    IDEM_ASSERT_OK(setup->Commit());
  }
  const Scope scope = MakeScope("full");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  IDEM_ASSERT_OK(tx->Claim(scope, idem::testing::kFingerprint, "w").status());
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> pages, tx->Query("PRAGMA page_count"));
  const int64_t limit = std::get<int64_t>(pages[0][0]) + 2;
  IDEM_ASSERT_OK(tx->Query(fmt::format("PRAGMA max_page_count = {}", limit)).status());
  EXPECT_EQ(CodeOf(tx->Execute("INSERT INTO blobs VALUES (zeroblob(1000000))")),
            StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(tx->Doomed()), StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(tx->Execute("INSERT INTO blobs VALUES (x'01')")), StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(tx->Commit()), StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(store->Get(scope)), StatusCode::kNotFound);
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> check, store->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows, check->Query("SELECT count(*) FROM blobs"));
  EXPECT_EQ(rows[0][0], SqlValue(int64_t{0}));
}

// A COMMIT through the native handle is turned into a rollback and dooms the transaction.
TEST_F(SqliteStoreTest, CommitThroughTheNativeHandleIsRolledBackAndDoomsTheTransaction) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> store, Open());
  const Scope scope = MakeScope("native");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, idem::testing::kFingerprint, "w"));
  auto* db = static_cast<sqlite3*>(tx->native_handle());
  EXPECT_NE(sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK);
  EXPECT_EQ(CodeOf(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, {})),
            StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Doomed()), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Commit()), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(store->Get(scope)), StatusCode::kNotFound);
}

}  // namespace
}  // namespace idem
