#include "idem/clock.h"

#include <gtest/gtest.h>

namespace idem {
namespace {

TEST(ManualClock, MovesOnlyWhenAdvanced) {
  ManualClock clock(1000);
  EXPECT_EQ(clock.NowMillis(), 1000);
  clock.Advance(Millis(250));
  EXPECT_EQ(clock.NowMillis(), 1250);
}

TEST(SystemClock, ReadsMillisecondsSinceEpochAfter2020) {
  EXPECT_GT(SystemClock().NowMillis(), 1'577'836'800'000);
}

}  // namespace
}  // namespace idem
