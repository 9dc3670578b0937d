// The lease guard suite, lost acknowledgements: what a LeaseGuard caller gets when a write went
// through but its answer was lost, or the store is down for a while (LostAckStore), and the
// keep-and-retry loop LeasedKey::FinishRetrying.
#include <memory>
#include <stop_token>

#include "guard/testing/guard_store_test.h"
#include "idem/lease_guard.h"
#include "idem/retry/retrier.h"
#include "store/testing/lost_ack_store.h"

namespace idem::testing {
namespace {

using absl::StatusCode;
using Kind = LeaseWrite::Kind;

// No jitter, 1 s between attempts: the tests count attempts by the clock.
FinishRetryOptions EverySecond(ManualClock& clock, retry::Sleeper& sleeper) {
  FinishRetryOptions options;
  options.backoff = {.jitter = retry::Jitter::kNone, .base = 1s, .cap = 1s};
  options.clock = &clock;
  options.sleeper = &sleeper;
  return options;
}

TEST_P(LeaseGuardTest, AcquireWhoseClaimAckWasLostHoldsTheKey) {
  LostAckStore lossy(*store_);
  LeaseGuard guard(lossy, Options("a"));
  lossy.LoseAcks(Kind::kClaim);
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(got->key.has_value());
  EXPECT_EQ(lossy.acks_lost(), 1);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(got->key->fence(), record->fence);  // the claim that went through, no second one
  EXPECT_EQ(got->key->lease_until_ms(), record->lease_until_ms);
  ASSERT_TRUE(got->key->Finish(ok_).ok());
}

TEST_P(LeaseGuardTest, TwoAcquisitionsOfOneGuardNeverBothHoldTheKey) {
  LeaseGuard guard(*store_, Options("a"));
  auto first = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(first.ok() && first->key) << first.status();
  auto second = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->key.has_value());
  EXPECT_TRUE(second->in_flight.has_value());
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->owner, "a/1");
}

// Issue 37, item 3b: two processes given one owner name ("orders-worker"; or PID 1 of two
// containers on one host, with the default owner), each with its own store handle, acquire one
// request: once with every acknowledgement arriving, once with the first one's claim answer lost.
// Only one of them gets to run the effect.
TEST_P(LeaseGuardTest, TwoGuardsSharingAnOwnerNameNeverBothRunTheEffect) {
  std::unique_ptr<Store> second_process = OpenOrDie();
  ASSERT_NE(second_process, nullptr);
  for (const bool lose_first_ack : {false, true}) {
    const Scope scope{scope_.tenant, scope_.key + (lose_first_ack ? "-lost-ack" : "")};
    LostAckStore lossy(*store_);
    LeaseGuard first(lossy, Options("orders-worker"));
    LeaseGuard second(*second_process, Options("orders-worker"));
    if (lose_first_ack) lossy.LoseAcks(Kind::kClaim);
    auto by_first = first.Acquire(scope, "fp");
    ASSERT_TRUE(by_first.ok()) << by_first.status();
    auto by_second = second.Acquire(scope, "fp");
    ASSERT_TRUE(by_second.ok()) << by_second.status();
    const int runs = (by_first->key.has_value() ? 1 : 0) + (by_second->key.has_value() ? 1 : 0);
    EXPECT_EQ(runs, 1) << "lost ack: " << lose_first_ack;
    EXPECT_TRUE(by_first->key.has_value());
    EXPECT_TRUE(by_second->in_flight.has_value());
    EXPECT_EQ(lossy.acks_lost(), lose_first_ack ? 1 : 0);
    auto record = store_->Get(scope);
    ASSERT_TRUE(record.ok()) << record.status();
    EXPECT_EQ(record->owner, "orders-worker/1");  // the label both processes wrote
    ASSERT_TRUE(by_first->key.has_value());
    ASSERT_TRUE(by_first->key->Finish(ok_).ok());
  }
}

TEST_P(LeaseGuardTest, HeartbeatFinishAndReleaseAfterALostAckAreResolvedByCallingAgain) {
  LostAckStore lossy(*store_);
  LeaseGuard guard(lossy, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  clock_.Advance(2s);
  lossy.LoseAcks(Kind::kHeartbeat);
  EXPECT_EQ(got->key->Heartbeat().status().code(), StatusCode::kUnavailable);
  auto until = got->key->Heartbeat();
  ASSERT_TRUE(until.ok()) << until.status();
  EXPECT_EQ(*until, clock_.NowMillis() + 10'000);
  lossy.LoseAcks(Kind::kComplete);
  EXPECT_EQ(got->key->Finish(ok_).status().code(), StatusCode::kUnavailable);
  auto finished = got->key->Finish(ok_);
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->state, KeyState::kCompleted);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->response, ok_);

  const Scope released{scope_.tenant, scope_.key + "-released"};
  auto other = guard.Acquire(released, "fp");
  ASSERT_TRUE(other.ok() && other->key);
  lossy.LoseAcks(Kind::kRelease);
  EXPECT_EQ(other->key->Release().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(other->key->Release().ok());
  EXPECT_EQ(store_->Get(released).status().code(), StatusCode::kNotFound);
}

TEST_P(LeaseGuardTest, FinishRetryingRecordsTheOutcomeOnceTheStoreIsBack) {
  LostAckStore lossy(*store_);
  LeaseGuard guard(lossy, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  lossy.RefuseBatches(2);           // down for two attempts,
  lossy.LoseAcks(Kind::kComplete);  // then the write goes through and its answer is lost
  retry::ManualSleeper sleeper(clock_);
  auto finished = got->key->FinishRetrying(ok_, EverySecond(clock_, sleeper));
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->state, KeyState::kCompleted);
  EXPECT_EQ(finished->response, ok_);
  EXPECT_EQ(lossy.batches_refused(), 2);
  EXPECT_EQ(lossy.acks_lost(), 1);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, KeyState::kCompleted);
  EXPECT_EQ(record->response, ok_);
}

TEST_P(LeaseGuardTest, FinishRetryingHeartbeatsTheKeyWhileItRetries) {
  LostAckStore lossy(*store_);
  LeaseGuard guard(lossy, Options("a"));  // a 10 s lease: a heartbeat every 3.33 s
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  const int64_t start = clock_.NowMillis();
  lossy.RefuseBatchesWith(Kind::kComplete, 4);  // attempts at 0, 1, 2 and 3 s fail
  retry::ManualSleeper sleeper(clock_);
  auto finished = got->key->FinishRetrying(ok_, EverySecond(clock_, sleeper));
  ASSERT_TRUE(finished.ok()) << finished.status();
  // At 4 s, past a third of the lease: heartbeaten, then recorded.
  EXPECT_EQ(got->key->lease_until_ms(), start + 4'000 + 10'000);
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, KeyState::kCompleted);
}

TEST_P(LeaseGuardTest, FinishRetryingStopsAtItsDeadlineAndCanBeCalledAgain) {
  LostAckStore lossy(*store_);
  LeaseGuard guard(lossy, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  lossy.RefuseBatches(1'000);
  retry::ManualSleeper sleeper(clock_);
  FinishRetryOptions options = EverySecond(clock_, sleeper);
  options.deadline = 5s;
  auto late = got->key->FinishRetrying(ok_, options);
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded) << late.status();
  EXPECT_LE(lossy.batches_refused(), 8);  // about one attempt a second, plus heartbeats
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->state, KeyState::kInProgress);  // nothing recorded, the claim still held
  lossy.Heal();
  auto finished = got->key->FinishRetrying(ok_, options);
  ASSERT_TRUE(finished.ok()) << finished.status();
  EXPECT_EQ(finished->state, KeyState::kCompleted);
}

TEST_P(LeaseGuardTest, FinishRetryingEndsAbortedWhenAnotherHolderHasTheKey) {
  LostAckStore lossy(*store_);
  LeaseGuard old_guard(lossy, Options("old"));
  LeaseGuard new_guard(*store_, Options("new"));
  auto old_hold = old_guard.Acquire(scope_, "fp");
  ASSERT_TRUE(old_hold.ok() && old_hold->key);
  clock_.Advance(11s);
  auto new_hold = new_guard.Acquire(scope_, "fp");
  ASSERT_TRUE(new_hold.ok() && new_hold->key) << new_hold.status();
  lossy.RefuseBatches(2);
  retry::ManualSleeper sleeper(clock_);
  auto lost = old_hold->key->FinishRetrying(StoredResponse{.status = 200, .body = "late"},
                                            EverySecond(clock_, sleeper));
  EXPECT_EQ(lost.status().code(), StatusCode::kAborted) << lost.status();
  ASSERT_TRUE(new_hold->key->Finish(ok_).ok());
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->response, ok_);
}

TEST_P(LeaseGuardTest, FinishRetryingIsCancelledByAStopRequest) {
  LostAckStore lossy(*store_);
  LeaseGuard guard(lossy, Options("a"));
  auto got = guard.Acquire(scope_, "fp");
  ASSERT_TRUE(got.ok() && got->key);
  lossy.RefuseBatches(1'000);
  std::stop_source stop;
  stop.request_stop();
  FinishRetryOptions options;
  options.stop = stop.get_token();
  auto stopped = got->key->FinishRetrying(ok_, options);  // real waits: cut short by the stop
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled) << stopped.status();
  EXPECT_EQ(lossy.batches_refused(), 1);
}

}  // namespace
}  // namespace idem::testing
