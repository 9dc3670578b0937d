#include <atomic>
#include <barrier>
#include <stdexcept>
#include <thread>
#include <vector>

#include "guard/testing/guard_store_test.h"
#include "idem/guard.h"

namespace idem::testing {
namespace {

TEST_P(GuardTest, FirstArrivalRunsEffectAndCommitsItWithTheOutcome) {
  Guard guard(*store_);
  auto result = guard.Run(scope_, "fp", WriteRow("key-1", 201));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->replayed);
  EXPECT_EQ(result->state, KeyState::kCompleted);
  EXPECT_EQ(result->response.status, 201);
  EXPECT_EQ(CountRows("effects"), 1);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kCompleted);
  EXPECT_EQ(record->response, result->response);
}

TEST_P(GuardTest, SecondArrivalReplaysStoredResponseWithoutRunningEffect) {
  Guard guard(*store_);
  std::atomic<int> runs{0};
  auto first = guard.Run(scope_, "fp", WriteRow("key-1", 200, &runs));
  auto second = guard.Run(scope_, "fp", WriteRow("key-1", 200, &runs));
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(runs.load(), 1);
  EXPECT_TRUE(second->replayed);
  EXPECT_EQ(second->response, first->response);
  EXPECT_EQ(CountRows("effects"), 1);
}

TEST_P(GuardTest, KeyReusedWithAnotherFingerprintIsFailedPreconditionAndRunsNothing) {
  Guard guard(*store_);
  std::atomic<int> runs{0};
  ASSERT_TRUE(guard.Run(scope_, "fp-1", WriteRow("key-1", 200, &runs)).ok());
  auto reused = guard.Run(scope_, "fp-2", WriteRow("other", 200, &runs));
  EXPECT_EQ(reused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(CountRows("effects"), 1);
}

TEST_P(GuardTest, DeterministicFailureRollsBackEffectAndStoresFailedFinal) {
  Guard guard(*store_);
  auto result = guard.Run(scope_, "fp", WriteRow("key-1", 422));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->state, KeyState::kFailedFinal);
  EXPECT_EQ(CountRows("effects"), 0);
  auto replay = guard.Run(scope_, "fp", WriteRow("key-1", 200));
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE(replay->replayed);
  EXPECT_EQ(replay->response.status, 422);
  EXPECT_EQ(CountRows("effects"), 0);
}

TEST_P(GuardTest, TransientResponseRollsBackEverythingAndStoresNothing) {
  Guard guard(*store_);
  auto result = guard.Run(scope_, "fp", WriteRow("key-1", 503));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->state, KeyState::kInProgress);
  EXPECT_EQ(result->response.status, 503);
  EXPECT_EQ(CountRows("effects"), 0);
  EXPECT_EQ(store_->Get(scope_).status().code(), absl::StatusCode::kNotFound);
  auto retried = guard.Run(scope_, "fp", WriteRow("key-1", 200));
  ASSERT_TRUE(retried.ok());
  EXPECT_FALSE(retried->replayed);
  EXPECT_EQ(CountRows("effects"), 1);
}

TEST_P(GuardTest, EffectErrorRollsBackEverythingAndIsReturnedAsIs) {
  Guard guard(*store_);
  auto result = guard.Run(scope_, "fp", [](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    SqlValue params[] = {std::string("key-1"), int64_t{1}};
    EXPECT_TRUE(tx.Execute("INSERT INTO effects(key, amount) VALUES ($1, $2)", params).ok());
    return absl::InvalidArgumentError("amount must be positive");
  });
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(result.status().message(), "amount must be positive");
  EXPECT_EQ(CountRows("effects"), 0);
  EXPECT_EQ(store_->Get(scope_).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(GuardTest, ExceptionFromEffectRollsBackEverythingAndPropagates) {
  Guard guard(*store_);
  Effect throwing = [](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    SqlValue params[] = {std::string("key-1"), int64_t{1}};
    EXPECT_TRUE(tx.Execute("INSERT INTO effects(key, amount) VALUES ($1, $2)", params).ok());
    throw std::runtime_error("effect failed");
  };
  EXPECT_THROW((void)guard.Run(scope_, "fp", throwing), std::runtime_error);
  EXPECT_EQ(CountRows("effects"), 0);
  EXPECT_EQ(store_->Get(scope_).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(GuardTest, KeyHeldByLiveLeaseIsReportedInFlight) {
  ClaimRequest lease{.scope = scope_, .fingerprint = "fp", .owner = "gateway", .lease = 30s};
  ASSERT_TRUE(store_->Claim(lease).ok());
  Guard guard(*store_);
  std::atomic<int> runs{0};
  auto result = guard.Run(scope_, "fp", WriteRow("key-1", 200, &runs));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(runs.load(), 0);
}

TEST_P(GuardTest, KeyWhoseLeaseLapsedIsTakenOverWithAGreaterFence) {
  ClaimRequest lease{.scope = scope_, .fingerprint = "fp", .owner = "dead", .lease = 30s};
  auto dead = store_->Claim(lease);
  ASSERT_TRUE(dead.ok()) << dead.status();
  clock_.Advance(31s);
  Guard guard(*store_);
  auto result = guard.Run(scope_, "fp", WriteRow("key-1", 200));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_FALSE(result->replayed);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_GT(record->fence, dead->record.fence);
  EXPECT_EQ(store_->Complete(scope_, dead->record.fence, StoredResponse{.status = 500}).code(),
            absl::StatusCode::kAborted);
}

TEST_P(GuardTest, LapsedLeaseOfAnotherRequestIsAMismatchAndRunsNothing) {
  ClaimRequest lease{.scope = scope_, .fingerprint = "fp-one", .owner = "dead", .lease = 30s};
  auto claimed = store_->Claim(lease);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  clock_.Advance(31s);
  Guard guard(*store_);
  std::atomic<int> runs{0};
  auto result = guard.Run(scope_, "fp-two", WriteRow("key-1", 200, &runs));
  EXPECT_EQ(result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(runs.load(), 0);
  EXPECT_EQ(CountRows("effects"), 0);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(*record, claimed->record);
}

TEST_P(GuardTest, ExpiredOutcomeCountsAsAbsentAndRunsAgain) {
  Guard guard(*store_);
  std::atomic<int> runs{0};
  ASSERT_TRUE(guard.Run(scope_, "fp", WriteRow("key-1", 200, &runs)).ok());
  clock_.Advance(24h + 1ms);
  auto again = guard.Run(scope_, "fp", WriteRow("key-1b", 200, &runs));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->replayed);
  EXPECT_EQ(runs.load(), 2);
}

TEST_P(GuardTest, TenantsNeverShareAKey) {
  Guard guard(*store_);
  ASSERT_TRUE(guard.Run({"tenant-a", "k"}, "fp-a", WriteRow("a", 200)).ok());
  auto other = guard.Run({"tenant-b", "k"}, "fp-b", WriteRow("b", 200));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(other->replayed);
  EXPECT_EQ(CountRows("effects"), 2);
}

TEST_P(GuardTest, ClassifierOverrideDecidesWhatIsStored) {
  GuardOptions options;
  options.classifier = OutcomeClassifier().With(409, OutcomeClass::kCompleted);
  Guard guard(*store_, options);
  auto result = guard.Run(scope_, "fp", WriteRow("key-1", 409));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->state, KeyState::kCompleted);
  EXPECT_EQ(CountRows("effects"), 1);
}

TEST_P(GuardTest, ConcurrentCallersOfOneKeyRunTheEffectOnceAndAllGetItsAnswer) {
  constexpr int kThreads = 8;
  std::atomic<int> runs{0};
  std::vector<absl::StatusOr<GuardResult>> results(kThreads, absl::UnknownError("not run"));
  std::barrier start(kThreads);
  std::vector<std::thread> threads;
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < kThreads; ++i) stores.push_back(OpenOrDie());
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      Guard guard(*stores[i]);
      start.arrive_and_wait();
      results[i] = guard.Run(scope_, "fp", WriteRow("key-1", 200, &runs));
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_EQ(CountRows("effects"), 1);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->response, results[0]->response);
  }
}

TEST_P(GuardTest, BatchCommitsEachCallsOutcomeAndUndoesOnlyTheFailedOnes) {
  Guard guard(*store_);
  std::vector<GuardCall> calls = {
      {{"t", "ok"}, "fp", WriteRow("ok", 200)},
      {{"t", "rejected"}, "fp", WriteRow("rejected", 400)},
      {{"t", "transient"}, "fp", WriteRow("transient", 503)},
      {{"t", "error"},
       "fp",
       [](Transaction&) -> absl::StatusOr<StoredResponse> {
         return absl::InvalidArgumentError("bad call");
       }},
      {{"t", "ok-2"}, "fp", WriteRow("ok-2", 201)},
  };
  auto results = guard.RunBatch(calls);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), calls.size());
  EXPECT_EQ((*results)[0]->state, KeyState::kCompleted);
  EXPECT_EQ((*results)[1]->state, KeyState::kFailedFinal);
  EXPECT_EQ((*results)[2]->state, KeyState::kInProgress);
  EXPECT_EQ((*results)[3].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*results)[4]->state, KeyState::kCompleted);
  EXPECT_EQ(CountRows("effects"), 2);  // "ok" and "ok-2" only
  EXPECT_EQ(store_->Get({"t", "ok"})->state, KeyState::kCompleted);
  EXPECT_EQ(store_->Get({"t", "rejected"})->state, KeyState::kFailedFinal);
  EXPECT_EQ(store_->Get({"t", "transient"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Get({"t", "error"}).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(GuardTest, BatchWithOneKeyTwiceRunsTheEffectOnceAndReplaysIt) {
  Guard guard(*store_);
  std::atomic<int> runs{0};
  std::vector<GuardCall> calls = {{scope_, "fp", WriteRow("key-1", 200, &runs)},
                                  {scope_, "fp", WriteRow("key-1", 200, &runs)}};
  auto results = guard.RunBatch(calls);
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_EQ(runs.load(), 1);
  EXPECT_FALSE((*results)[0]->replayed);
  EXPECT_TRUE((*results)[1]->replayed);
  EXPECT_EQ((*results)[1]->response, (*results)[0]->response);
}

TEST_P(GuardTest, BatchReplaysKeysCompletedBeforeIt) {
  Guard guard(*store_);
  std::atomic<int> runs{0};
  ASSERT_TRUE(guard.Run(scope_, "fp", WriteRow("key-1", 200, &runs)).ok());
  auto results = guard.RunBatch({{scope_, "fp", WriteRow("key-1", 200, &runs)},
                                 {scope_, "other-fp", WriteRow("key-1", 200, &runs)}});
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(runs.load(), 1);
  EXPECT_TRUE((*results)[0]->replayed);
  EXPECT_EQ((*results)[1].status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(GuardTest, BatchCallWhoseOutcomeCannotBeRecordedIsUndoneAlone) {
  Guard guard(*store_);
  // The effect moves its own key's fence, so recording the outcome finds a stale fence.
  Effect tampering = [](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    SqlValue params[] = {std::string("tampered"), int64_t{1}};
    EXPECT_TRUE(tx.Execute("INSERT INTO effects(key, amount) VALUES ($1, $2)", params).ok());
    EXPECT_TRUE(tx.Execute("UPDATE idem_keys SET fence = fence + 100 WHERE key = 'tampered'").ok());
    return StoredResponse{.status = 200};
  };
  auto results = guard.RunBatch({{{"t", "before"}, "fp", WriteRow("before", 200)},
                                 {{"t", "tampered"}, "fp", tampering},
                                 {{"t", "after"}, "fp", WriteRow("after", 200)}});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_TRUE((*results)[0].ok());
  EXPECT_EQ((*results)[1].status().code(), absl::StatusCode::kAborted);
  EXPECT_TRUE((*results)[2].ok());
  EXPECT_EQ(CountRows("effects"), 2);  // "before" and "after": the tampering call left nothing
  EXPECT_EQ(store_->Get({"t", "tampered"}).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace idem::testing
