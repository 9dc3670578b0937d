#include <type_traits>

#include "guard/testing/guard_store_test.h"
#include "idem/lease_guard.h"

namespace idem::testing {
namespace {

// A LeasedKey is one holder's: moved, never copied, and made only by the guard.
static_assert(!std::is_copy_constructible_v<LeasedKey>);
static_assert(std::is_nothrow_move_constructible_v<LeasedKey>);
static_assert(!std::is_constructible_v<LeasedKey, Store&, Scope, const LeaseOptions&,
                                       const LeaseWriteResult&>);

TEST_P(LeaseGuardTest, FirstAcquireClaimsTheKeyWithAFence) {
  LeaseGuard guard(*store_, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->key.has_value());
  EXPECT_FALSE(got->replay.has_value());
  EXPECT_GT(got->key->fence(), 0);
  EXPECT_FALSE(got->key->taken_over());
}

TEST_P(LeaseGuardTest, AcquireWhileAnotherHolderIsLiveReportsInFlightWithItsLeaseEnd) {
  LeaseGuard first(*store_, Options("a"));
  LeaseGuard second(*store_, Options("b"));
  auto held = first.Acquire(scope_, "fp");
  ASSERT_TRUE(held.ok() && held->key) << held.status();
  clock_.Advance(3s);
  auto got = second.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->in_flight.has_value());
  EXPECT_FALSE(got->key.has_value());
  EXPECT_FALSE(got->replay.has_value());
  EXPECT_EQ(got->in_flight->lease_until_ms, held->key->lease_until_ms());
  EXPECT_EQ(got->in_flight->now_ms, clock_.NowMillis());
  EXPECT_EQ(got->in_flight->remaining(), 7s);  // Options' lease is 10 s
  // The record is untouched: the holder still finishes it.
  ASSERT_TRUE(held->key->Finish(ok_).ok());
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
  EXPECT_EQ(old_hold->key->Heartbeat().status().code(), absl::StatusCode::kAborted);
  ASSERT_TRUE(new_hold->key->Finish(ok_).ok());
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->response, ok_);
  EXPECT_EQ(record->owner, "new/1");  // the guard's first acquisition
}

TEST_P(LeaseGuardTest, HeartbeatKeepsTheKeyFromBeingTakenOver) {
  LeaseGuard holder(*store_, Options("a"));
  LeaseGuard other(*store_, Options("b"));
  auto hold = holder.Acquire(scope_, "fp");
  ASSERT_TRUE(hold.ok() && hold->key);
  clock_.Advance(8s);
  auto until = hold->key->Heartbeat();
  ASSERT_TRUE(until.ok()) << until.status();
  EXPECT_EQ(*until, clock_.NowMillis() + 10'000);  // the new lease end, by the store's clock
  EXPECT_EQ(hold->key->lease_until_ms(), *until);
  clock_.Advance(8s);  // 16 s after the claim, 8 s after the heartbeat
  auto got = other.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->in_flight) << got.status();
  EXPECT_EQ(got->in_flight->lease_until_ms, *until);
}

TEST_P(LeaseGuardTest, LapsedLeaseOfAnotherRequestIsAMismatchNotATakeover) {
  LeaseGuard first(*store_, Options("a"));
  ASSERT_TRUE(first.Acquire(scope_, "fp-1").ok());
  clock_.Advance(11s);
  EXPECT_EQ(first.Acquire(scope_, "fp-2").status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_P(LeaseGuardTest, FinishAndReleaseAreIdempotentOnRetry) {
  LeaseGuard guard(*store_, Options("a"));
  auto done = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(done.ok() && done->key);
  auto first = done->key->Finish(ok_);
  ASSERT_TRUE(first.ok()) << first.status();
  auto again = done->key->Finish(ok_);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->state, KeyState::kCompleted);
  EXPECT_EQ(done->key->Finish(StoredResponse{.status = 200, .body = "other"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Another LeasedKey's view of the same write (as after a lost answer): the store accepts it.
  const Scope other_scope{scope_.tenant, scope_.key + "-released"};
  auto released = guard.Acquire(other_scope, "fp");
  ASSERT_TRUE(released.ok() && released->key);
  ASSERT_TRUE(released->key->Release().ok());
  EXPECT_TRUE(released->key->Release().ok());
  EXPECT_EQ(store_->Get(other_scope).status().code(), absl::StatusCode::kNotFound);
}

TEST_P(LeaseGuardTest, AStoreRetryOfTheSameOutcomeIsAccepted) {
  LeaseGuard guard(*store_, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  ASSERT_TRUE(got->key->Finish(ok_).ok());
  // The write committed but its answer was lost: the same write again is OK, changes nothing.
  const LeaseWrite retry{.kind = LeaseWrite::Kind::kComplete,
                         .scope = scope_,
                         .fence = got->key->fence(),
                         .response = ok_};
  auto results = store_->ApplyLeaseBatch({&retry, 1});
  ASSERT_TRUE(results.ok()) << results.status();
  EXPECT_TRUE((*results)[0].status.ok()) << (*results)[0].status;
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
