// Transaction mode of the PostgreSQL store against a real server: a concurrent claimer waits for
// the winner, timeouts and lost connections are Unavailable, values keep their types.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <chrono>
#include <future>
#include <thread>

#include "idem/store.h"
#include "pg_test_support.h"

namespace idem {
namespace {

using Rows = std::vector<std::vector<std::string>>;

#define IDEM_PG_ASSERT_OK(expr)     \
  do {                              \
    const absl::Status s_ = (expr); \
    ASSERT_TRUE(s_.ok()) << s_;     \
  } while (false)

class PostgresTransaction : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    schema_ = fresh->schema;
    uri_ = fresh->uri;
    store_ = Open({});
    ASSERT_NE(store_, nullptr);
    Admin("CREATE TABLE effects (k text PRIMARY KEY, v bigint)");
  }

  std::unique_ptr<Store> Open(StoreOptions options) {
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(uri_, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  Rows Admin(std::string_view sql) {
    absl::StatusOr<Rows> rows = pgtest::AdminQuery(schema_, sql);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : Rows{};
  }

  std::unique_ptr<StoreTransaction> Begin(Store& store) {
    absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
    EXPECT_TRUE(tx.ok()) << tx.status();
    return tx.ok() ? *std::move(tx) : nullptr;
  }

  static int64_t BackendPid(StoreTransaction& tx) {
    absl::StatusOr<std::vector<SqlRow>> rows = tx.Query("SELECT pg_backend_pid()");
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? std::get<int64_t>((*rows)[0][0]) : 0;
  }

  // Returns once the backend `pid` waits for a lock (it is blocked behind another transaction).
  void WaitUntilBlocked(int64_t pid) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      Rows rows =
          Admin(fmt::format("SELECT wait_event_type FROM pg_stat_activity WHERE pid = {}", pid));
      if (!rows.empty() && rows[0][0] == "Lock") return;
    }
    FAIL() << "backend " << pid << " never waited for a lock";
  }

  const Scope scope_{"tenant", "key-1"};
  ManualClock clock_;
  std::string schema_;
  std::string uri_;
  std::unique_ptr<Store> store_;
};

TEST_F(PostgresTransaction, ConcurrentClaimWaitsForTheWinnerAndReplaysItsCommit) {
  auto winner = Begin(*store_);
  absl::StatusOr<ClaimResult> won = winner->Claim(scope_, "fp", "winner");
  ASSERT_TRUE(won.ok() && won->claimed) << won.status();

  auto loser = Begin(*store_);
  const int64_t loser_pid = BackendPid(*loser);
  auto pending =
      std::async(std::launch::async, [&] { return loser->Claim(scope_, "fp", "loser"); });
  WaitUntilBlocked(loser_pid);

  const StoredResponse response{201, {{"Content-Type", "text/plain"}}, std::string("ok\0!", 4)};
  ASSERT_TRUE(winner->Finish(scope_, won->record.fence, KeyState::kCompleted, response).ok());
  ASSERT_TRUE(winner->Commit().ok());

  absl::StatusOr<ClaimResult> lost = pending.get();
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_FALSE(lost->claimed);
  EXPECT_EQ(lost->record.state, KeyState::kCompleted);
  EXPECT_EQ(lost->record.response, response);
  EXPECT_EQ(lost->record.owner, "winner");
}

TEST_F(PostgresTransaction, ConcurrentClaimBecomesTheExecutorWhenTheWinnerRollsBack) {
  auto winner = Begin(*store_);
  ASSERT_TRUE(winner->Claim(scope_, "fp", "winner").ok());
  auto loser = Begin(*store_);
  const int64_t loser_pid = BackendPid(*loser);
  auto pending =
      std::async(std::launch::async, [&] { return loser->Claim(scope_, "fp", "loser"); });
  WaitUntilBlocked(loser_pid);

  ASSERT_TRUE(winner->Rollback().ok());

  absl::StatusOr<ClaimResult> second = pending.get();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->claimed);
  EXPECT_EQ(second->record.owner, "loser");
  EXPECT_GT(second->record.fence, 0);
}

TEST_F(PostgresTransaction, WaitLongerThanLockTimeoutIsUnavailable) {
  StoreOptions options;
  options.lock_timeout = std::chrono::milliseconds(200);
  std::unique_ptr<Store> impatient = Open(options);
  ASSERT_NE(impatient, nullptr);
  auto winner = Begin(*store_);
  ASSERT_TRUE(winner->Claim(scope_, "fp", "winner").ok());

  auto loser = Begin(*impatient);
  absl::StatusOr<ClaimResult> claim = loser->Claim(scope_, "fp", "loser");
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kUnavailable) << claim.status();
  EXPECT_NE(claim.status().message().find("55P03"), absl::string_view::npos) << claim.status();
  EXPECT_TRUE(loser->Rollback().ok());
}

TEST_F(PostgresTransaction, StatementLongerThanStatementTimeoutIsUnavailable) {
  StoreOptions options;
  options.statement_timeout = std::chrono::milliseconds(100);
  std::unique_ptr<Store> strict = Open(options);
  ASSERT_NE(strict, nullptr);
  auto tx = Begin(*strict);
  absl::StatusOr<std::vector<SqlRow>> rows = tx->Query("SELECT pg_sleep(30)");
  EXPECT_EQ(rows.status().code(), absl::StatusCode::kUnavailable) << rows.status();
  EXPECT_NE(rows.status().message().find("57014"), absl::string_view::npos) << rows.status();
}

TEST_F(PostgresTransaction, QueryReturnsValuesTypedByColumnType) {
  auto tx = Begin(*store_);
  const SqlValue params[] = {int64_t{9'000'000'000}, 2.5, std::string("text"),
                             Blob{std::string("\0\x01\xff", 3)}, std::monostate{}};
  absl::StatusOr<std::vector<SqlRow>> rows = tx->Query(
      "SELECT $1, $2, $3, $4, $5::text, 7::int2, 8::int4, 1.25::numeric, 0.5::float4, true, "
      "'x'::varchar",
      params);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const SqlRow expected = {int64_t{9'000'000'000},
                           2.5,
                           std::string("text"),
                           Blob{std::string("\0\x01\xff", 3)},
                           std::monostate{},
                           int64_t{7},
                           int64_t{8},
                           1.25,
                           0.5,
                           int64_t{1},
                           std::string("x")};
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0], expected);
}

TEST_F(PostgresTransaction, ExecuteReturnsRowsChangedAndCommitKeepsThem) {
  auto tx = Begin(*store_);
  const SqlValue a[] = {std::string("a"), int64_t{1}};
  const SqlValue b[] = {std::string("b"), int64_t{2}};
  ASSERT_EQ(*tx->Execute("INSERT INTO effects VALUES ($1, $2)", a), 1);
  ASSERT_EQ(*tx->Execute("INSERT INTO effects VALUES ($1, $2)", b), 1);
  EXPECT_EQ(*tx->Execute("UPDATE effects SET v = v + 1"), 2);
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(Admin("SELECT k, v FROM effects ORDER BY k"), (Rows{{"a", "2"}, {"b", "3"}}));
}

TEST_F(PostgresTransaction,
       UniqueViolationIsAlreadyExistsAndCommitThenIsInternalAndCommitsNothing) {
  auto tx = Begin(*store_);
  const SqlValue a[] = {std::string("a"), int64_t{1}};
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ($1, $2)", a).ok());
  EXPECT_EQ(tx->Execute("INSERT INTO effects VALUES ($1, $2)", a).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(tx->Commit().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(Admin("SELECT count(*) FROM effects"), (Rows{{"0"}}));
}

TEST_F(PostgresTransaction, RejectedSqlIsInvalidArgument) {
  auto tx = Begin(*store_);
  EXPECT_EQ(tx->Execute("INSERT INTO no_such_table VALUES (1)").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(tx->Rollback().ok());
  auto again = Begin(*store_);
  EXPECT_EQ(again->Query("SELEC 1").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PostgresTransaction, SavepointRollbackUndoesOnlyLaterWrites) {
  auto tx = Begin(*store_);
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('before', 1)").ok());
  ASSERT_TRUE(tx->Savepoint("effect").ok());
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('after', 2)").ok());
  ASSERT_TRUE(tx->RollbackToSavepoint("effect").ok());
  ASSERT_TRUE(tx->ReleaseSavepoint("effect").ok());
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(Admin("SELECT k FROM effects"), (Rows{{"before"}}));
  EXPECT_EQ(tx->Savepoint("x; DROP TABLE effects").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(PostgresTransaction, SavepointBeforeAnyStatementRollsBackEverythingAndStaysUsable) {
  auto tx = Begin(*store_);
  ASSERT_TRUE(tx->Savepoint("call").ok());
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('undone', 1)").ok());
  EXPECT_EQ(tx->Execute("INSERT INTO effects VALUES ('undone', 2)").status().code(),
            absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(tx->RollbackToSavepoint("call").ok());
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('kept', 3)").ok());
  ASSERT_TRUE(tx->RollbackToSavepoint("call").ok());  // the savepoint survives a rollback to it
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('last', 4)").ok());
  ASSERT_TRUE(tx->ReleaseSavepoint("call").ok());
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(Admin("SELECT k FROM effects"), (Rows{{"last"}}));
}

TEST_F(PostgresTransaction, ReleasingAnOuterSavepointKeepsTheWritesOfInnerOnes) {
  auto tx = Begin(*store_);
  ASSERT_TRUE(tx->Savepoint("outer").ok());
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('a', 1)").ok());
  ASSERT_TRUE(tx->Savepoint("inner").ok());
  IDEM_PG_ASSERT_OK(tx->Execute("INSERT INTO effects VALUES ('b', 2)").status());
  ASSERT_TRUE(tx->ReleaseSavepoint("outer").ok());
  EXPECT_EQ(tx->RollbackToSavepoint("inner").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('c', 3)").ok());
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(Admin("SELECT k FROM effects ORDER BY k"), (Rows{{"a"}, {"b"}, {"c"}}));
}

TEST_F(PostgresTransaction, UnknownOrReleasedSavepointIsInvalidArgument) {
  auto tx = Begin(*store_);
  EXPECT_EQ(tx->RollbackToSavepoint("never").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(tx->ReleaseSavepoint("never").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('a', 1)").ok());
  ASSERT_TRUE(tx->Savepoint("s").ok());
  ASSERT_TRUE(tx->ReleaseSavepoint("s").ok());
  EXPECT_EQ(tx->RollbackToSavepoint("s").code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(Admin("SELECT k FROM effects"), (Rows{{"a"}}));
}

TEST_F(PostgresTransaction, TimeoutChangedByTheCallersSqlIsRestoredForTheNextTransaction) {
  StoreOptions options;
  options.max_connections = 1;  // the next transaction gets the same connection
  options.statement_timeout = std::chrono::milliseconds(1234);
  std::unique_ptr<Store> single = Open(options);
  ASSERT_NE(single, nullptr);
  auto show = [&] {
    auto tx = Begin(*single);
    absl::StatusOr<std::vector<SqlRow>> rows = tx->Query("SHOW statement_timeout");
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? std::get<std::string>((*rows)[0][0]) : std::string();
  };
  EXPECT_EQ(show(), "1234ms");
  {
    auto tx = Begin(*single);
    ASSERT_TRUE(tx->Execute("SET statement_timeout = 0").ok());
    ASSERT_TRUE(tx->Commit().ok());
  }
  EXPECT_EQ(show(), "1234ms");
}

TEST_F(PostgresTransaction, NativeHandleWritesInsideTheTransaction) {
  auto tx = Begin(*store_);
  auto* conn = static_cast<PGconn*>(tx->native_handle());
  ASSERT_NE(conn, nullptr);
  PGresult* result = PQexec(conn, "INSERT INTO effects VALUES ('native', 1)");
  EXPECT_EQ(PQresultStatus(result), PGRES_COMMAND_OK) << PQresultErrorMessage(result);
  PQclear(result);
  ASSERT_TRUE(tx->Rollback().ok());
  EXPECT_EQ(Admin("SELECT count(*) FROM effects"), (Rows{{"0"}}));
}

TEST_F(PostgresTransaction, KilledConnectionIsUnavailableAndNotReused) {
  StoreOptions options;
  options.max_connections = 1;
  std::unique_ptr<Store> single = Open(options);
  ASSERT_NE(single, nullptr);
  auto tx = Begin(*single);
  const int64_t pid = BackendPid(*tx);
  Admin(fmt::format("SELECT pg_terminate_backend({})", pid));
  absl::StatusOr<ClaimResult> claim = tx->Claim(scope_, "fp", "owner");
  EXPECT_EQ(claim.status().code(), absl::StatusCode::kUnavailable) << claim.status();
  EXPECT_TRUE(tx->Rollback().ok());
  tx.reset();

  auto next = Begin(*single);
  EXPECT_NE(BackendPid(*next), pid);
  absl::StatusOr<ClaimResult> retry = next->Claim(scope_, "fp", "owner");
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_TRUE(retry->claimed);
}

TEST_F(PostgresTransaction, TransactionOutlivingItsStoreStillCommits) {
  std::unique_ptr<Store> store = Open({});
  ASSERT_NE(store, nullptr);
  auto tx = Begin(*store);
  store.reset();
  ASSERT_TRUE(tx->Execute("INSERT INTO effects VALUES ('late', 1)").ok());
  ASSERT_TRUE(tx->Commit().ok());
  EXPECT_EQ(Admin("SELECT k FROM effects"), (Rows{{"late"}}));
}

TEST_F(PostgresTransaction, PoolNeverLendsMoreThanMaxConnections) {
  StoreOptions options;
  options.max_connections = 2;
  options.lock_timeout = std::chrono::milliseconds(100);
  std::unique_ptr<Store> small = Open(options);
  ASSERT_NE(small, nullptr);
  auto first = Begin(*small);
  auto second = Begin(*small);
  absl::StatusOr<std::unique_ptr<StoreTransaction>> third = small->Begin();
  EXPECT_EQ(third.status().code(), absl::StatusCode::kUnavailable) << third.status();
  EXPECT_EQ(small->Get(scope_).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(first->Commit().ok());
  EXPECT_TRUE(small->Begin().ok());
}

TEST_F(PostgresTransaction, DeadlockIsUnavailable) {
  Admin("INSERT INTO effects VALUES ('a', 0), ('b', 0)");
  auto one = Begin(*store_);
  auto two = Begin(*store_);
  ASSERT_TRUE(one->Execute("UPDATE effects SET v = 1 WHERE k = 'a'").ok());
  ASSERT_TRUE(two->Execute("UPDATE effects SET v = 2 WHERE k = 'b'").ok());
  const int64_t one_pid = BackendPid(*one);
  auto blocked = std::async(std::launch::async,
                            [&] { return one->Execute("UPDATE effects SET v = 1 WHERE k = 'b'"); });
  WaitUntilBlocked(one_pid);
  absl::StatusOr<int64_t> closing = two->Execute("UPDATE effects SET v = 2 WHERE k = 'a'");
  if (!closing.ok()) {
    ASSERT_TRUE(two->Rollback().ok());
  }
  absl::StatusOr<int64_t> waited = blocked.get();
  // The server picks one victim; the other goes through.
  ASSERT_NE(closing.ok(), waited.ok());
  const absl::Status victim = closing.ok() ? waited.status() : closing.status();
  EXPECT_EQ(victim.code(), absl::StatusCode::kUnavailable) << victim;
  EXPECT_NE(victim.message().find("40P01"), absl::string_view::npos) << victim;
}

// PostgreSQL committed the claim and the effect on an effect's COMMIT; the outcome then went in
// autocommit and the guard answered OK. Through the native handle it can still happen, but the
// store notices and records nothing as if it had been atomic.
TEST_F(PostgresTransaction, CommitThroughTheNativeHandleDoomsTheTransaction) {
  auto tx = Begin(*store_);
  const Scope scope{"t", "native"};
  absl::StatusOr<ClaimResult> claim = tx->Claim(scope, std::string(64, 'a'), "w");
  ASSERT_TRUE(claim.ok()) << claim.status();
  auto* conn = static_cast<PGconn*>(tx->native_handle());
  PQclear(PQexec(conn, "COMMIT"));
  EXPECT_EQ(tx->Finish(scope, claim->record.fence, KeyState::kCompleted, {}).code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(tx->Doomed().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(tx->Commit().code(), absl::StatusCode::kInternal);
  absl::StatusOr<KeyRecord> record = store_->Get(scope);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kInProgress);  // committed mid-way, never "completed"
}

}  // namespace
}  // namespace idem
