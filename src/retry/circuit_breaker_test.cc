#include "idem/retry/circuit_breaker.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace idem::retry {
namespace {

using Mode = CircuitBreakerOptions::Mode;

CircuitBreakerOptions RateOptions() {
  CircuitBreakerOptions o;
  o.mode = Mode::kFailureRate;
  o.failure_rate_threshold = 0.5;
  o.window_size = 10;
  o.minimum_calls = 4;
  o.open_for = Millis(1000);
  o.half_open_probes = 2;
  return o;
}

void Call(CircuitBreaker& b, bool ok) {
  absl::StatusOr<CircuitBreaker::Permit> p = b.Acquire();
  ASSERT_TRUE(p.ok()) << p.status();
  if (ok) {
    b.RecordSuccess(*p);
  } else {
    b.RecordFailure(*p);
  }
}

TEST(CircuitBreaker, StaysClosedBelowMinimumCallsEvenIfAllFail) {
  ManualClock clock;
  auto b = *CircuitBreaker::Create(RateOptions(), clock);
  for (int i = 0; i < 3; ++i) Call(*b, false);
  EXPECT_EQ(b->state(), BreakerState::kClosed);
  Call(*b, false);
  EXPECT_EQ(b->state(), BreakerState::kOpen);
}

TEST(CircuitBreaker, OpensWhenFailureRateReachesThreshold) {
  ManualClock clock;
  auto b = *CircuitBreaker::Create(RateOptions(), clock);
  Call(*b, true);
  Call(*b, true);
  Call(*b, true);
  Call(*b, false);  // 1 of 4
  Call(*b, false);  // 2 of 5
  EXPECT_EQ(b->state(), BreakerState::kClosed);
  Call(*b, false);  // 3 of 6 = 50 %
  EXPECT_EQ(b->state(), BreakerState::kOpen);
}

TEST(CircuitBreaker, SlidingWindowForgetsOldFailures) {
  ManualClock clock;
  CircuitBreakerOptions o = RateOptions();
  o.window_size = 4;
  auto b = *CircuitBreaker::Create(o, clock);
  Call(*b, false);
  for (int i = 0; i < 20; ++i) Call(*b, true);
  Call(*b, false);  // window: 3 ok, 1 failed
  EXPECT_EQ(b->state(), BreakerState::kClosed);
}

TEST(CircuitBreaker, OpenRefusesWithUnavailableUntilOpenForPasses) {
  ManualClock clock;
  auto b = *CircuitBreaker::Create(RateOptions(), clock);
  for (int i = 0; i < 4; ++i) Call(*b, false);
  EXPECT_EQ(b->Acquire().status().code(), absl::StatusCode::kUnavailable);
  clock.Advance(Millis(999));
  EXPECT_EQ(b->Acquire().status().code(), absl::StatusCode::kUnavailable);
  clock.Advance(Millis(1));
  EXPECT_EQ(b->state(), BreakerState::kHalfOpen);
}

TEST(CircuitBreaker, HalfOpenLetsOnlyTheBoundedNumberOfProbes) {
  ManualClock clock;
  auto b = *CircuitBreaker::Create(RateOptions(), clock);
  for (int i = 0; i < 4; ++i) Call(*b, false);
  clock.Advance(Millis(1000));
  auto p1 = b->Acquire();
  auto p2 = b->Acquire();
  ASSERT_TRUE(p1.ok());
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(b->Acquire().status().code(), absl::StatusCode::kUnavailable);
  b->RecordSuccess(*p1);
  EXPECT_EQ(b->state(), BreakerState::kHalfOpen);
  EXPECT_EQ(b->Acquire().status().code(), absl::StatusCode::kUnavailable);
  b->RecordSuccess(*p2);
  EXPECT_EQ(b->state(), BreakerState::kClosed);
}

TEST(CircuitBreaker, FailedProbeReopens) {
  ManualClock clock;
  auto b = *CircuitBreaker::Create(RateOptions(), clock);
  for (int i = 0; i < 4; ++i) Call(*b, false);
  clock.Advance(Millis(1000));
  Call(*b, false);
  EXPECT_EQ(b->state(), BreakerState::kOpen);
  clock.Advance(Millis(999));
  EXPECT_EQ(b->state(), BreakerState::kOpen);  // the open period restarted at the failed probe
}

TEST(CircuitBreaker, ClosingStartsAFreshCount) {
  ManualClock clock;
  auto b = *CircuitBreaker::Create(RateOptions(), clock);
  for (int i = 0; i < 4; ++i) Call(*b, false);
  clock.Advance(Millis(1000));
  Call(*b, true);
  Call(*b, true);
  ASSERT_EQ(b->state(), BreakerState::kClosed);
  for (int i = 0; i < 3; ++i) Call(*b, false);
  EXPECT_EQ(b->state(), BreakerState::kClosed);  // 3 calls: below minimum_calls again
}

TEST(CircuitBreaker, LateOutcomeFromBeforeOpeningIsIgnored) {
  ManualClock clock;
  auto b = *CircuitBreaker::Create(RateOptions(), clock);
  auto slow = b->Acquire();
  ASSERT_TRUE(slow.ok());
  for (int i = 0; i < 4; ++i) Call(*b, false);
  clock.Advance(Millis(1000));
  auto probe = b->Acquire();
  ASSERT_TRUE(probe.ok());
  b->RecordSuccess(*slow);  // issued while closed: must not count as a probe success
  b->RecordSuccess(*slow);
  EXPECT_EQ(b->state(), BreakerState::kHalfOpen);
}

TEST(CircuitBreaker, ConsecutiveModeOpensOnNFailuresInARow) {
  ManualClock clock;
  CircuitBreakerOptions o = RateOptions();
  o.mode = Mode::kConsecutiveFailures;
  o.consecutive_failures = 3;
  auto b = *CircuitBreaker::Create(o, clock);
  Call(*b, false);
  Call(*b, false);
  Call(*b, true);  // breaks the run
  Call(*b, false);
  Call(*b, false);
  EXPECT_EQ(b->state(), BreakerState::kClosed);
  Call(*b, false);
  EXPECT_EQ(b->state(), BreakerState::kOpen);
}

TEST(CircuitBreaker, ConcurrentFailuresOpenItExactlyOnce) {
  ManualClock clock;
  CircuitBreakerOptions o = RateOptions();
  o.minimum_calls = 50;
  o.window_size = 100;
  auto b = *CircuitBreaker::Create(o, clock);
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        auto p = b->Acquire();
        if (!p.ok()) {
          ++refused;
          continue;
        }
        b->RecordFailure(*p);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(b->state(), BreakerState::kOpen);
  EXPECT_GE(refused.load(), 400 - 100);  // at most window_size calls got through before opening
}

TEST(CircuitBreaker, RejectsOutOfRangeOptions) {
  ManualClock clock;
  CircuitBreakerOptions o;
  o.failure_rate_threshold = 0;
  EXPECT_EQ(CircuitBreaker::Create(o, clock).status().code(), absl::StatusCode::kInvalidArgument);
  o = CircuitBreakerOptions{};
  o.half_open_probes = 0;
  EXPECT_EQ(CircuitBreaker::Create(o, clock).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::retry
