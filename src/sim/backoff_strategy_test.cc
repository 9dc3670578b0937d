#include "sim/backoff_strategy.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>

#include "idem/retry/backoff.h"

namespace idem::sim {
namespace {

constexpr BackoffParams kStudy{5, 2000};

TEST(BackoffStrategy, NamesRoundTripInReportOrder) {
  const char* expected[] = {"none", "exponential", "full", "equal", "decorrelated"};
  ASSERT_EQ(AllStrategies().size(), 5u);
  for (std::size_t i = 0; i < AllStrategies().size(); ++i) {
    EXPECT_STREQ(StrategyName(AllStrategies()[i]), expected[i]);
    absl::StatusOr<Strategy> parsed = ParseStrategy(expected[i]);
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, AllStrategies()[i]);
  }
}

TEST(BackoffStrategy, UnknownNameIsInvalidArgument) {
  EXPECT_EQ(ParseStrategy("linear").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseStrategy("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(BackoffStrategy, NoneRetriesImmediately) {
  std::mt19937_64 rng(1);
  auto backoff = MakeClientBackoff(Strategy::kNone, kStudy);
  for (int attempt = 1; attempt < 20; ++attempt) EXPECT_EQ(backoff->NextDelayMs(attempt, rng), 0);
}

// The attempt counter is raised before the first backoff, so the first wait is base * 2.
TEST(BackoffStrategy, ExponentialStartsAtTwiceBaseDoublesAndStopsAtCap) {
  std::mt19937_64 rng(1);
  auto backoff = MakeClientBackoff(Strategy::kExponential, kStudy);
  const double expected[] = {10, 20, 40, 80, 160, 320, 640, 1280, 2000, 2000};
  for (int attempt = 1; attempt <= 10; ++attempt) {
    EXPECT_DOUBLE_EQ(backoff->NextDelayMs(attempt, rng), expected[attempt - 1]) << attempt;
  }
  EXPECT_DOUBLE_EQ(backoff->NextDelayMs(100000, rng), 2000);
}

TEST(BackoffStrategy, FullJitterDrawsBetweenZeroAndTheExponentialStep) {
  std::mt19937_64 rng(7);
  auto backoff = MakeClientBackoff(Strategy::kFull, kStudy);
  double sum = 0;
  for (int i = 0; i < 2000; ++i) {
    const double delay = backoff->NextDelayMs(3, rng);  // step 40 ms
    ASSERT_GE(delay, 0);
    ASSERT_LE(delay, 40);
    sum += delay;
  }
  EXPECT_NEAR(sum / 2000, 20, 2);  // uniform: the mean is half the step
}

TEST(BackoffStrategy, EqualJitterKeepsAtLeastHalfTheStep) {
  std::mt19937_64 rng(7);
  auto backoff = MakeClientBackoff(Strategy::kEqual, kStudy);
  for (int i = 0; i < 2000; ++i) {
    const double delay = backoff->NextDelayMs(3, rng);
    ASSERT_GE(delay, 20);
    ASSERT_LE(delay, 40);
  }
}

TEST(BackoffStrategy, DecorrelatedGrowsFromThePreviousDelayWithinBaseAndCap) {
  std::mt19937_64 rng(7);
  auto backoff = MakeClientBackoff(Strategy::kDecorrelated, kStudy);
  double previous = kStudy.base_ms;
  bool reached_cap = false;
  for (int attempt = 1; attempt <= 200; ++attempt) {
    const double delay = backoff->NextDelayMs(attempt, rng);
    ASSERT_GE(delay, kStudy.base_ms);
    ASSERT_LE(delay, std::min(kStudy.cap_ms, previous * 3));
    reached_cap = reached_cap || delay == kStudy.cap_ms;
    previous = delay;
  }
  EXPECT_TRUE(reached_cap);
}

TEST(BackoffStrategy, SameSeedGivesSameDelays) {
  for (Strategy strategy : AllStrategies()) {
    std::mt19937_64 rng_a(42);
    std::mt19937_64 rng_b(42);
    auto a = MakeClientBackoff(strategy, kStudy);
    auto b = MakeClientBackoff(strategy, kStudy);
    for (int attempt = 1; attempt <= 12; ++attempt) {
      EXPECT_EQ(a->NextDelayMs(attempt, rng_a), b->NextDelayMs(attempt, rng_b));
    }
  }
}

// One set of formulas: each waiting strategy is the retry toolkit's schedule of the same jitter,
// draw for draw, with the study's attempt number as the retry number.
TEST(BackoffStrategy, WaitingStrategiesAreTheRetryToolkitsSchedules) {
  const std::pair<Strategy, retry::Jitter> pairs[] = {
      {Strategy::kExponential, retry::Jitter::kNone},
      {Strategy::kFull, retry::Jitter::kFull},
      {Strategy::kEqual, retry::Jitter::kEqual},
      {Strategy::kDecorrelated, retry::Jitter::kDecorrelated}};
  const retry::BackoffOptions options{.base = Millis(5), .cap = Millis(2000)};
  for (const auto& [strategy, jitter] : pairs) {
    std::mt19937_64 sim_rng(9);
    std::mt19937_64 toolkit_rng(9);
    auto backoff = MakeClientBackoff(strategy, kStudy);
    retry::BackoffOptions toolkit = options;
    toolkit.jitter = jitter;
    Millis previous = toolkit.base;
    for (int attempt = 1; attempt <= 15; ++attempt) {
      previous = retry::ComputeDelay(toolkit, attempt, previous, toolkit_rng);
      EXPECT_EQ(backoff->NextDelayMs(attempt, sim_rng), static_cast<double>(previous.count()))
          << StrategyName(strategy) << " attempt " << attempt;
    }
  }
}

}  // namespace
}  // namespace idem::sim
