#include "guard/testing/guard_store_test.h"
#include "idem/lease_guard.h"

namespace idem::testing {
namespace {

TEST_P(LeaseGuardTest, FirstAcquireClaimsTheKeyWithAFence) {
  LeaseGuard guard(*store_, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->key.has_value());
  EXPECT_FALSE(got->replay.has_value());
  EXPECT_GT(got->key->fence(), 0);
  EXPECT_FALSE(got->key->taken_over());
}

TEST_P(LeaseGuardTest, AcquireWhileAnotherHolderIsLiveIsAborted) {
  LeaseGuard first(*store_, Options("a"));
  LeaseGuard second(*store_, Options("b"));
  ASSERT_TRUE(first.Acquire(scope_, "fp").ok());
  EXPECT_EQ(second.Acquire(scope_, "fp").status().code(), absl::StatusCode::kAborted);
}

TEST_P(LeaseGuardTest, CompletedOutcomeIsReplayedToLaterArrivals) {
  LeaseGuard guard(*store_, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  auto finished = got->key->Finish(ok_);
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->state, KeyState::kCompleted);
  auto again = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(again.ok() && again->replay);
  EXPECT_TRUE(again->replay->replayed);
  EXPECT_EQ(again->replay->response, ok_);
}

TEST_P(LeaseGuardTest, DeterministicFailureIsStoredAsFailedFinal) {
  LeaseGuard guard(*store_, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  auto finished = got->key->Finish(StoredResponse{.status = 400, .body = "bad"});
  ASSERT_TRUE(finished.ok());
  EXPECT_EQ(finished->state, KeyState::kFailedFinal);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, KeyState::kFailedFinal);
}

TEST_P(LeaseGuardTest, TransientOutcomeReleasesTheKeyAndStoresNothing) {
  LeaseGuard guard(*store_, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  auto finished = got->key->Finish(StoredResponse{.status = 502});
  ASSERT_TRUE(finished.ok());
  EXPECT_EQ(finished->state, KeyState::kInProgress);
  EXPECT_EQ(store_->Get(scope_).status().code(), absl::StatusCode::kNotFound);
  auto again = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->key.has_value());
}

TEST_P(LeaseGuardTest, LapsedLeaseIsTakenOverAndTheOldHolderCanNoLongerWrite) {
  LeaseGuard old_guard(*store_, Options("old"));
  LeaseGuard new_guard(*store_, Options("new"));
  auto old_hold = old_guard.Acquire(scope_, "fp");
  ASSERT_TRUE(old_hold.ok() && old_hold->key);
  clock_.Advance(11s);
  auto new_hold = new_guard.Acquire(scope_, "fp");
  ASSERT_TRUE(new_hold.ok() && new_hold->key) << new_hold.status();
  EXPECT_TRUE(new_hold->key->taken_over());
  EXPECT_GT(new_hold->key->fence(), old_hold->key->fence());
  EXPECT_EQ(old_hold->key->Finish(StoredResponse{.status = 500}).status().code(),
            absl::StatusCode::kAborted);
  EXPECT_EQ(old_hold->key->Heartbeat().code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(new_hold->key->Finish(ok_).ok());
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->response, ok_);
  EXPECT_EQ(record->owner, "new");
}

TEST_P(LeaseGuardTest, HeartbeatKeepsTheKeyFromBeingTakenOver) {
  LeaseGuard holder(*store_, Options("a"));
  LeaseGuard other(*store_, Options("b"));
  auto hold = holder.Acquire(scope_, "fp");
  ASSERT_TRUE(hold.ok() && hold->key);
  clock_.Advance(8s);
  ASSERT_TRUE(hold->key->Heartbeat().ok());
  clock_.Advance(8s);  // 16 s after the claim, 8 s after the heartbeat
  EXPECT_EQ(other.Acquire(scope_, "fp").status().code(), absl::StatusCode::kAborted);
}

TEST_P(LeaseGuardTest, KeyReusedWithAnotherFingerprintIsFailedPrecondition) {
  LeaseGuard guard(*store_, Options("a"));
  ASSERT_TRUE(guard.Acquire(scope_, "fp-1").ok());
  EXPECT_EQ(guard.Acquire(scope_, "fp-2").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(LeaseGuardTest, ReleaseMakesTheKeyAbsent) {
  LeaseGuard guard(*store_, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  ASSERT_TRUE(got->key->Release().ok());
  EXPECT_EQ(store_->Get(scope_).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace idem::testing
