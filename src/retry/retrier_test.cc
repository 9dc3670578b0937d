#include "idem/retry/retrier.h"

#include <gtest/gtest.h>

#include <vector>

namespace idem::retry {
namespace {

using Kind = AttemptResult::Kind;

AttemptResult Answer(int status) { return {Kind::kResponse, status, std::nullopt, false}; }

// A loop on a ManualClock: each attempt takes `attempt_ms`, waits advance the clock.
class RetrierTest : public ::testing::Test {
 protected:
  RetryOutcome Run(const RetryPolicyOptions& po, std::vector<AttemptResult> script,
                   RequestTraits request = {"GET", false}, int64_t attempt_ms = 10) {
    policy_.emplace(*RetryPolicy::Create(po));
    backoff_.emplace(*Backoff::Create({Jitter::kNone, Millis(100), Millis(1000)}, 1));
    RetrierParts parts{&*policy_, &*backoff_, &clock_, &sleeper_, budget_.get(), breaker_.get()};
    size_t next = 0;
    return RunWithRetries(
        parts, request,
        [&](const AttemptContext& ctx) {
          timeouts_.push_back(ctx.timeout);
          // Like a real attempt, it ends when its time is up.
          if (ctx.timeout.count() > 0 && ctx.timeout < Millis(attempt_ms)) {
            clock_.Advance(ctx.timeout);
            return AttemptResult{Kind::kTimedOut, 0, std::nullopt, false};
          }
          clock_.Advance(Millis(attempt_ms));
          return script[std::min(next++, script.size() - 1)];
        },
        [&](const AttemptReport& r) { reports_.push_back(r); });
  }

  ManualClock clock_{0};
  ManualSleeper sleeper_{clock_};
  std::optional<RetryPolicy> policy_;
  std::optional<Backoff> backoff_;
  std::unique_ptr<RetryBudget> budget_;
  std::unique_ptr<CircuitBreaker> breaker_;
  std::vector<Millis> timeouts_;
  std::vector<AttemptReport> reports_;
};

TEST_F(RetrierTest, RetriesUntilSuccessWaitingTheBackoff) {
  RetryOutcome o =
      Run({5, Millis(0), Millis(0), Millis(60'000)}, {Answer(503), Answer(503), Answer(200)});
  EXPECT_EQ(o.reason, StopReason::kSucceeded);
  EXPECT_EQ(o.attempts, 3);
  EXPECT_EQ(o.last.status, 200);
  ASSERT_EQ(reports_.size(), 3u);
  EXPECT_EQ(reports_[0].decision.delay, Millis(100));
  EXPECT_EQ(reports_[1].decision.delay, Millis(200));
  EXPECT_EQ(o.elapsed, Millis(3 * 10 + 100 + 200));
}

TEST_F(RetrierTest, StopsAtMaxAttemptsWithTheLastAnswer) {
  RetryOutcome o = Run({3, Millis(0), Millis(0), Millis(60'000)}, {Answer(502)});
  EXPECT_EQ(o.reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(o.attempts, 3);
  EXPECT_EQ(o.last.status, 502);
}

TEST_F(RetrierTest, EachAttemptGetsWhatIsLeftOfTheDeadline) {
  RetryOutcome o =
      Run({10, Millis(1000), Millis(400), Millis(60'000)}, {Answer(503)}, {"GET", false}, 300);
  EXPECT_EQ(o.reason, StopReason::kDeadline);
  // t=0: 400; t=400 (300 + 100 wait): 400; t=900 (700 + 200 wait): 100 left.
  ASSERT_EQ(timeouts_.size(), 3u);
  EXPECT_EQ(timeouts_[0], Millis(400));
  EXPECT_EQ(timeouts_[1], Millis(400));
  EXPECT_EQ(timeouts_[2], Millis(100));
  EXPECT_EQ(o.last.kind, Kind::kTimedOut);
  EXPECT_EQ(o.elapsed, Millis(1000));
}

TEST_F(RetrierTest, EmptyBudgetStopsRetries) {
  budget_ = *RetryBudget::Create({0.0, 0.0, Millis(10'000)}, clock_);
  RetryOutcome o = Run({5, Millis(0), Millis(0), Millis(60'000)}, {Answer(503), Answer(200)});
  EXPECT_EQ(o.reason, StopReason::kBudget);
  EXPECT_EQ(o.attempts, 1);
}

TEST_F(RetrierTest, OpenBreakerStopsTheLoopBeforeSending) {
  CircuitBreakerOptions bo;
  bo.mode = CircuitBreakerOptions::Mode::kConsecutiveFailures;
  bo.consecutive_failures = 2;
  breaker_ = *CircuitBreaker::Create(bo, clock_);
  RetryOutcome o = Run({10, Millis(0), Millis(0), Millis(60'000)}, {Answer(503)});
  EXPECT_EQ(o.reason, StopReason::kCircuitOpen);
  EXPECT_EQ(o.attempts, 2);
  EXPECT_EQ(o.last.status, 503);
}

TEST_F(RetrierTest, UnkeyedPostIsTriedOnce) {
  RetryOutcome o =
      Run({5, Millis(0), Millis(0), Millis(60'000)}, {Answer(503), Answer(200)}, {"POST", false});
  EXPECT_EQ(o.reason, StopReason::kUnsafe);
  EXPECT_EQ(o.attempts, 1);
}

}  // namespace
}  // namespace idem::retry
