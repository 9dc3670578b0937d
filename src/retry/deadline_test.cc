#include "idem/retry/deadline.h"

#include <gtest/gtest.h>

namespace idem::retry {
namespace {

TEST(Deadline, RemainingShrinksWithTheClockAndNeverGoesNegative) {
  ManualClock clock;
  const Deadline d = Deadline::After(clock, Millis(2000));
  EXPECT_EQ(d.Remaining(), Millis(2000));
  clock.Advance(Millis(1500));
  EXPECT_EQ(d.Remaining(), Millis(500));
  EXPECT_FALSE(d.Expired());
  clock.Advance(Millis(600));
  EXPECT_EQ(d.Remaining(), Millis(0));
  EXPECT_TRUE(d.Expired());
}

TEST(DeadlineHeader, RoundTripsRemainingMilliseconds) {
  EXPECT_EQ(FormatDeadlineHeader(Millis(1850)), "1850");
  EXPECT_EQ(FormatDeadlineHeader(Millis(-5)), "0");
  EXPECT_EQ(*ParseDeadlineHeader("1850"), Millis(1850));
  EXPECT_EQ(*ParseDeadlineHeader(" 0 "), Millis(0));
}

TEST(DeadlineHeader, RejectsAnythingButWholeMilliseconds) {
  for (const char* bad : {"", "-1", "1.5", "2s", "abc", "1234567890123"}) {
    EXPECT_EQ(ParseDeadlineHeader(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ShrinkTimeout, TakesTheSmallerOfOwnTimeoutAndCallerBudget) {
  EXPECT_EQ(ShrinkTimeout(Millis(30'000), Millis(1200)), Millis(1200));
  EXPECT_EQ(ShrinkTimeout(Millis(500), Millis(1200)), Millis(500));
  EXPECT_EQ(ShrinkTimeout(Millis(500), std::nullopt), Millis(500));
  EXPECT_EQ(ShrinkTimeout(Millis::max(), Millis(0)), Millis(0));
}

// Three hops, each with a 10 s timeout of its own and 100 ms of work before calling on: the
// budget a caller started with only shrinks on the way in.
TEST(ShrinkTimeout, TimeoutsShrinkInwardAcrossHops) {
  ManualClock clock;
  Deadline outer = Deadline::After(clock, Millis(1000));
  std::string header = FormatDeadlineHeader(outer.Remaining());
  Millis previous = Millis(1000);
  for (int hop = 0; hop < 3; ++hop) {
    const Millis timeout = *TimeoutForRequest(Millis(10'000), header);
    EXPECT_LE(timeout, previous);
    previous = timeout;
    const Deadline mine = Deadline::After(clock, timeout);
    clock.Advance(Millis(100));
    header = FormatDeadlineHeader(mine.Remaining());
  }
  EXPECT_EQ(previous, Millis(800));
}

TEST(TimeoutForRequest, MalformedHeaderIsInvalidArgumentAbsentHeaderKeepsOwn) {
  EXPECT_EQ(TimeoutForRequest(Millis(100), "soon").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*TimeoutForRequest(Millis(100), std::nullopt), Millis(100));
}

}  // namespace
}  // namespace idem::retry
