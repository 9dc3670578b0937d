// The guard suite, what only the store may decide (StoreTransaction::Doomed): an effect's own
// errors are that call's result, whatever their code; a transaction the store doomed is never
// committed in part, and only it is retried.
#include <atomic>
#include <vector>

#include "guard/testing/guard_store_test.h"
#include "idem/guard.h"
#include "store/testing/faulty_store.h"

namespace idem::testing {
namespace {

Effect Unavailable(std::atomic<int>* runs) {
  return [runs](Transaction&) -> absl::StatusOr<StoredResponse> {
    runs->fetch_add(1);
    return absl::UnavailableError("payment provider down");
  };
}

// One effect's Unavailable aborted the whole batch, throwing away the others' outcomes.
TEST_P(GuardTest, EffectsOwnUnavailableIsThatCallsResultAndTheBatchCommits) {
  Guard guard(*store_);
  std::atomic<int> runs{0};
  auto results = guard.RunBatch({{{"t", "ok"}, "fp", WriteRow("ok", 200)},
                                 {{"t", "down"}, "fp", Unavailable(&runs)},
                                 {{"t", "ok-2"}, "fp", WriteRow("ok-2", 201)}});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0]->state, KeyState::kCompleted);
  EXPECT_EQ((*results)[1].status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*results)[2]->state, KeyState::kCompleted);
  EXPECT_EQ(CountRows("effects"), 2);
  EXPECT_EQ(store_->Get({"t", "down"}).status().code(), absl::StatusCode::kNotFound);
}

// With transient_retries set, Run and RunBatch re-ran every effect on an effect's Unavailable.
TEST_P(GuardTest, EffectsOwnUnavailableIsNeverRetried) {
  GuardOptions options;
  options.transient_retries = 3;
  Guard guard(*store_, options);
  std::atomic<int> runs{0};
  EXPECT_EQ(guard.Run(scope_, "fp", Unavailable(&runs)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(runs.load(), 1);
  std::atomic<int> ok_runs{0};
  auto results = guard.RunBatch(
      {{{"t", "ok"}, "fp", WriteRow("ok", 200, &ok_runs)}, {scope_, "fp", Unavailable(&runs)}});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(runs.load(), 2);
  EXPECT_EQ(ok_runs.load(), 1);
}

// An effect that swallows a failed statement and answers 200 completed on SQLite and became a
// FailedPrecondition (a 422) on PostgreSQL.
TEST_P(GuardTest, EffectThatSwallowsAFailedStatementRecordsNothing) {
  Guard guard(*store_);
  Effect swallowing = [](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    SqlValue params[] = {std::string("dup"), int64_t{1}};
    EXPECT_TRUE(tx.Execute("INSERT INTO effects(key, amount) VALUES ($1, $2)", params).ok());
    EXPECT_EQ(
        tx.Execute("INSERT INTO effects(key, amount) VALUES ($1, $2)", params).status().code(),
        absl::StatusCode::kAlreadyExists);
    return StoredResponse{.status = 200};
  };
  auto result = guard.Run(scope_, "fp", swallowing);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(CountRows("effects"), 0);
  EXPECT_EQ(store_->Get(scope_).status().code(), absl::StatusCode::kNotFound);
}

// Ending a call failed after its outcome was recorded: the call reported an error while its
// effect committed with the batch.
TEST_P(GuardTest, BatchWhoseSavepointStatementFailsCommitsNothing) {
  FaultyStore faulty(*store_,
                     {SavepointFault::Kind::kRelease, "idem_call", 1, absl::StatusCode::kInternal});
  Guard guard(faulty);
  auto results = guard.RunBatch(
      {{{"t", "a"}, "fp", WriteRow("a", 200)}, {{"t", "b"}, "fp", WriteRow("b", 200)}});
  EXPECT_EQ(results.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(CountRows("effects"), 0);
  EXPECT_EQ(store_->Get({"t", "a"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Get({"t", "b"}).status().code(), absl::StatusCode::kNotFound);
}

// A savepoint that could not be rolled back to leaves the call's claim in place: the batch must
// not commit it as an orphaned in_progress claim.
TEST_P(GuardTest, BatchWhoseUndoFailsCommitsNoOrphanedClaim) {
  FaultyStore faulty(
      *store_, {SavepointFault::Kind::kRollbackTo, "idem_call", 1, absl::StatusCode::kInternal});
  Guard guard(faulty);
  auto results = guard.RunBatch(
      {{{"t", "a"}, "fp", WriteRow("a", 200)}, {{"t", "b"}, "fp", WriteRow("b", 503)}});
  EXPECT_EQ(results.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(CountRows("effects"), 0);
  EXPECT_EQ(store_->Get({"t", "a"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Get({"t", "b"}).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(GuardTest, TransactionTheStoreDoomedIsRetried) {
  FaultyStore faulty(*store_, {SavepointFault::Kind::kRelease, "idem_call", 1});
  GuardOptions options;
  options.transient_retries = 1;
  Guard guard(faulty, options);
  std::atomic<int> runs{0};
  auto results = guard.RunBatch({{scope_, "fp", WriteRow("key-1", 200, &runs)}});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ((*results)[0]->state, KeyState::kCompleted);
  EXPECT_EQ(runs.load(), 2);  // the doomed first attempt's effect was rolled back
  EXPECT_EQ(CountRows("effects"), 1);
}

}  // namespace
}  // namespace idem::testing
