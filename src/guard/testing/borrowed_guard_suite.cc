// RunOnceIn on a transaction the application opened on its own connection, on every store: the
// application's write, the claim, the effect and the outcome commit together when the
// application commits, and what each outcome leaves in the transaction.
#include "guard/testing/borrowed_guard_suite.h"

#include <barrier>
#include <string>
#include <thread>
#include <vector>

#include "idem/borrowed_transaction.h"

namespace idem::testing {

using ::absl::StatusCode;

void BorrowedGuardTest::SetUp() {
  auto conn = GetParam().open_fresh(/*with_schema=*/true);
  ASSERT_TRUE(conn.ok()) << conn.status();
  conn_ = *std::move(conn);
  ASSERT_TRUE(conn_->Exec("CREATE TABLE orders (id TEXT PRIMARY KEY)").ok());
  ASSERT_TRUE(conn_->Exec("CREATE TABLE effects (id TEXT PRIMARY KEY)").ok());
}

absl::StatusOr<GuardResult> BorrowedGuardTest::ArriveOn(CallerConnection& conn,
                                                        const std::string& order,
                                                        const std::string& fingerprint, int status,
                                                        bool commit) {
  if (absl::Status begun = conn.Exec(conn.begin_sql()); !begun.ok()) return begun;
  if (absl::Status own = conn.Exec("INSERT INTO orders (id) VALUES ('" + order + "')"); !own.ok()) {
    return own;
  }
  absl::StatusOr<GuardResult> result;
  {
    auto tx = conn.Borrow({.clock = &clock_});
    if (!tx.ok()) return tx.status();
    const Effect effect = [&](Transaction& effect_tx) -> absl::StatusOr<StoredResponse> {
      ++effect_runs_;
      const SqlValue id[] = {order};
      auto written = effect_tx.Execute("INSERT INTO effects (id) VALUES ($1)", id);
      if (!written.ok()) return written.status();
      return StoredResponse{.status = status, .body = "order " + order};
    };
    result = RunOnceIn(**tx, scope_, fingerprint, effect);
    if (!(*tx)->Doomed().ok()) commit = false;
  }
  if (absl::Status ended = conn.Exec(commit ? "COMMIT" : "ROLLBACK"); !ended.ok()) return ended;
  return result;
}

int64_t BorrowedGuardTest::Count(const std::string& table) {
  auto count = conn_->QueryInt("SELECT COUNT(*) FROM " + table);
  EXPECT_TRUE(count.ok()) << count.status();
  return count.value_or(-1);
}

namespace {

TEST_P(BorrowedGuardTest, CallersWriteAndTheGuardedEffectCommitTogetherAndTheSecondArrivalReplays) {
  auto first = Arrive("o-1", "fp", 201);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->state, KeyState::kCompleted);
  EXPECT_FALSE(first->replayed);
  EXPECT_EQ(Count("orders"), 1);
  EXPECT_EQ(Count("effects"), 1);
  EXPECT_EQ(Count("idem_keys"), 1);

  auto second = Arrive("o-2", "fp", 201, /*commit=*/false);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(second->replayed);
  EXPECT_EQ(second->response.status, 201);
  EXPECT_EQ(second->response.body, "order o-1");
  EXPECT_EQ(effect_runs_.load(), 1);
  EXPECT_EQ(Count("effects"), 1);
}

TEST_P(BorrowedGuardTest, CallersRollbackLeavesNoKeyAndTheNextArrivalRunsTheEffect) {
  ASSERT_TRUE(Arrive("o-1", "fp", 201, /*commit=*/false).ok());
  EXPECT_EQ(Count("idem_keys"), 0);
  EXPECT_EQ(Count("effects"), 0);
  auto again = Arrive("o-1", "fp", 201);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->replayed);
  EXPECT_EQ(effect_runs_.load(), 2);
  EXPECT_EQ(Count("effects"), 1);
}

TEST_P(BorrowedGuardTest, KeyReusedWithAnotherFingerprintIsFailedPreconditionAndKeepsCallersTx) {
  ASSERT_TRUE(Arrive("o-1", "fp", 201).ok());
  auto other = Arrive("o-2", "other-fp", 201);  // committed: the caller's own write is kept
  EXPECT_EQ(other.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(effect_runs_.load(), 1);
  EXPECT_EQ(Count("orders"), 2);
  EXPECT_EQ(Count("effects"), 1);
}

TEST_P(BorrowedGuardTest, TransientOutcomeThenCallersCommitLeavesNoClaimAndNoEffect) {
  auto transient = Arrive("o-1", "fp", 503);
  ASSERT_TRUE(transient.ok()) << transient.status();
  EXPECT_EQ(transient->state, KeyState::kInProgress);
  EXPECT_EQ(Count("idem_keys"), 0);
  EXPECT_EQ(Count("effects"), 0);
  EXPECT_EQ(Count("orders"), 1);  // the caller's own write committed
  auto retried = Arrive("o-2", "fp", 201);
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->state, KeyState::kCompleted);
  EXPECT_FALSE(retried->replayed);
}

TEST_P(BorrowedGuardTest, FailedFinalThenCallersCommitKeepsTheErrorRecordButNotTheEffect) {
  auto failed = Arrive("o-1", "fp", 422);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_EQ(failed->state, KeyState::kFailedFinal);
  EXPECT_EQ(Count("idem_keys"), 1);
  EXPECT_EQ(Count("effects"), 0);
  auto replay = Arrive("o-2", "fp", 201, /*commit=*/false);
  ASSERT_TRUE(replay.ok()) << replay.status();
  EXPECT_TRUE(replay->replayed);
  EXPECT_EQ(replay->response.status, 422);
  EXPECT_EQ(effect_runs_.load(), 1);
}

TEST_P(BorrowedGuardTest, EffectErrorUndoesTheGuardsPartAndLeavesTheCallersTxUsable) {
  ASSERT_TRUE(conn_->Exec("INSERT INTO effects (id) VALUES ('o-1')").ok());
  auto failed = Arrive("o-1", "fp", 201);  // the effect's INSERT violates the primary key
  EXPECT_EQ(failed.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(Count("idem_keys"), 0);
  EXPECT_EQ(Count("orders"), 1);  // the caller's commit went through, with its own write only
}

// PostgreSQL: a second caller's claim waits for the first's transaction; SQLite: its BEGIN
// IMMEDIATE waits for the first's commit. Either way it then replays the committed outcome.
TEST_P(BorrowedGuardTest, ConcurrentCallersOfOneKeyRunTheEffectOnceAndAllGetItsAnswer) {
  constexpr int kCallers = 6;
  std::vector<std::unique_ptr<CallerConnection>> conns;
  for (int i = 0; i < kCallers; ++i) {
    auto conn = GetParam().open_again();
    ASSERT_TRUE(conn.ok()) << conn.status();
    conns.push_back(*std::move(conn));
  }
  std::vector<absl::StatusOr<GuardResult>> results(kCallers, absl::UnknownError("not run"));
  std::barrier start(kCallers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i] = ArriveOn(*conns[i], "o-" + std::to_string(i), "fp", 201);
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(effect_runs_.load(), 1);
  EXPECT_EQ(Count("effects"), 1);
  EXPECT_EQ(Count("orders"), kCallers);  // every caller's own write committed
  int replayed = 0;
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->response, results[0]->response);
    replayed += result->replayed ? 1 : 0;
  }
  EXPECT_EQ(replayed, kCallers - 1);
}

}  // namespace
}  // namespace idem::testing
