#include "idem/retry/backoff.h"

#include <gtest/gtest.h>

namespace idem::retry {
namespace {

constexpr int kSamples = 20'000;

BackoffOptions Options(Jitter jitter, int64_t base, int64_t cap) {
  return BackoffOptions{jitter, Millis(base), Millis(cap)};
}

// Draws kSamples delays for retry `retry`, checks each lies in [lo, hi], returns their mean.
double MeanWithin(const BackoffOptions& o, int retry, Millis previous, int64_t lo, int64_t hi) {
  std::mt19937_64 rng(42);
  double sum = 0;
  for (int i = 0; i < kSamples; ++i) {
    const int64_t d = ComputeDelay(o, retry, previous, rng).count();
    EXPECT_GE(d, lo);
    EXPECT_LE(d, hi);
    sum += static_cast<double>(d);
  }
  return sum / kSamples;
}

TEST(CappedExponential, DoublesFromBaseAndStopsAtCap) {
  const BackoffOptions o = Options(Jitter::kNone, 100, 1000);
  EXPECT_EQ(CappedExponential(o, 0), Millis(100));
  EXPECT_EQ(CappedExponential(o, 1), Millis(200));
  EXPECT_EQ(CappedExponential(o, 3), Millis(800));
  EXPECT_EQ(CappedExponential(o, 4), Millis(1000));
  EXPECT_EQ(CappedExponential(o, 1'000'000), Millis(1000));  // no overflow at huge retry numbers
}

TEST(Backoff, NoJitterIsExactlyTheCappedExponential) {
  Backoff b = *Backoff::Create(Options(Jitter::kNone, 50, 300), 1);
  EXPECT_EQ(b.NextDelay(), Millis(50));
  EXPECT_EQ(b.NextDelay(), Millis(100));
  EXPECT_EQ(b.NextDelay(), Millis(200));
  EXPECT_EQ(b.NextDelay(), Millis(300));
  EXPECT_EQ(b.NextDelay(), Millis(300));
  b.Reset();
  EXPECT_EQ(b.NextDelay(), Millis(50));
}

TEST(Backoff, FullJitterStaysInZeroToCeilingWithMeanHalfOfIt) {
  const BackoffOptions o = Options(Jitter::kFull, 100, 10'000);
  for (int retry : {0, 3, 10}) {
    const double v = static_cast<double>(CappedExponential(o, retry).count());
    const double mean = MeanWithin(o, retry, o.base, 0, static_cast<int64_t>(v));
    EXPECT_NEAR(mean, v / 2, v * 0.02) << "retry " << retry;
  }
}

TEST(Backoff, EqualJitterKeepsHalfTheCeilingWithMeanThreeQuarters) {
  const BackoffOptions o = Options(Jitter::kEqual, 100, 10'000);
  for (int retry : {0, 3, 10}) {
    const auto v = CappedExponential(o, retry).count();
    const double mean = MeanWithin(o, retry, o.base, v / 2, v);
    EXPECT_NEAR(mean, 0.75 * static_cast<double>(v), static_cast<double>(v) * 0.02);
  }
}

TEST(Backoff, DecorrelatedJitterDrawsBetweenBaseAndThreePrevious) {
  const BackoffOptions o = Options(Jitter::kDecorrelated, 100, 10'000);
  // Below the cap: U(base, 3 * previous), mean (base + 3 * previous) / 2.
  const double mean = MeanWithin(o, 5, Millis(1000), 100, 3000);
  EXPECT_NEAR(mean, (100.0 + 3000.0) / 2, 3100 * 0.02);
  // Near the cap: min(cap, U(base, 3 * previous)) piles up at the cap.
  const double capped = MeanWithin(o, 5, Millis(8000), 100, 10'000);
  // E[min(cap, U(a, b))] with a=100, b=24000, cap=10000.
  const double a = 100, b = 24'000, c = 10'000;
  const double expected = ((c * c - a * a) / 2 + c * (b - c)) / (b - a);
  EXPECT_NEAR(capped, expected, expected * 0.02);
}

TEST(Backoff, DecorrelatedScheduleNeverLeavesBaseToCap) {
  Backoff b = *Backoff::Create(Options(Jitter::kDecorrelated, 10, 500), 7);
  for (int i = 0; i < 10'000; ++i) {
    const Millis d = b.NextDelay();
    ASSERT_GE(d, Millis(10));
    ASSERT_LE(d, Millis(500));
  }
}

TEST(Backoff, SameSeedGivesSameScheduleDifferentSeedDiffers) {
  const BackoffOptions o = Options(Jitter::kFull, 100, 100'000);
  Backoff a = *Backoff::Create(o, 99);
  Backoff b = *Backoff::Create(o, 99);
  Backoff c = *Backoff::Create(o, 100);
  bool differs = false;
  for (int i = 0; i < 12; ++i) {
    const Millis da = a.NextDelay();
    EXPECT_EQ(da, b.NextDelay());
    differs = differs || da != c.NextDelay();
  }
  EXPECT_TRUE(differs);
}

TEST(Backoff, RejectsCapBelowBaseAndNegativeBase) {
  EXPECT_EQ(Backoff::Create(Options(Jitter::kFull, 100, 50), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Backoff::Create(Options(Jitter::kFull, -1, 50), 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseJitter, AcceptsTheFourNamesAndRejectsOthers) {
  for (Jitter j : {Jitter::kNone, Jitter::kFull, Jitter::kEqual, Jitter::kDecorrelated}) {
    EXPECT_EQ(*ParseJitter(JitterName(j)), j);
  }
  EXPECT_EQ(ParseJitter("exponential").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::retry
