#include "sim/study_progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace idem::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

class StudyProgressTest : public ::testing::Test {
 protected:
  StudyProgress Make(ProgressOptions options) {
    options.shorten_hint = "lower --runs";
    return StudyProgress("idem sim backoff", options, clock_,
                         [this](const std::string& line) { lines_.push_back(line); });
  }

  ManualClock clock_{1'000'000};
  std::vector<std::string> lines_;
};

TEST_F(StudyProgressTest, QuickRunPrintsNothing) {
  StudyProgress progress = Make({});
  for (int done = 1; done <= 100; ++done) {
    clock_.Advance(Millis(10));
    progress.Update(done, 100);
  }
  progress.Finish();
  EXPECT_THAT(lines_, IsEmpty());
}

TEST_F(StudyProgressTest, LongRunReportsShareAndTimeLeftAtMostOncePerInterval) {
  StudyProgress progress = Make({});
  for (int done = 1; done <= 10; ++done) {
    clock_.Advance(Millis(1000));
    progress.Update(done, 10);
  }
  progress.Finish();
  // Quiet for 2 s, then a line every 2 s, then the closing line.
  EXPECT_THAT(lines_, ElementsAre("idem sim backoff: 20% of the runs done, about 8s left",
                                  "idem sim backoff: 40% of the runs done, about 6s left",
                                  "idem sim backoff: 60% of the runs done, about 4s left",
                                  "idem sim backoff: 80% of the runs done, about 2s left",
                                  "idem sim backoff: 100% of the runs done in 10s"));
}

TEST_F(StudyProgressTest, RunEstimatedBeyondTheBoundIsWarnedAboutOnce) {
  StudyProgress progress = Make({});
  clock_.Advance(Millis(3000));
  progress.Update(1, 100'000);  // 3 s per unit: about 83 hours
  clock_.Advance(Millis(3000));
  progress.Update(2, 100'000);
  ASSERT_GE(lines_.size(), 2u);
  EXPECT_EQ(lines_[0],
            "idem sim backoff: at this pace the whole run takes about 83h20m: lower --runs; "
            "Ctrl-C stops it");
  int warnings = 0;
  for (const std::string& line : lines_) warnings += line.find("at this pace") != std::string::npos;
  EXPECT_EQ(warnings, 1);
}

TEST_F(StudyProgressTest, AlwaysReportsFromTheStartAndAtTheEnd) {
  StudyProgress progress = Make({.always = true});
  progress.Update(1, 4);
  clock_.Advance(Millis(10));
  progress.Update(4, 4);
  progress.Finish();
  ASSERT_EQ(lines_.size(), 2u);
  EXPECT_THAT(lines_[0], HasSubstr("25% of the runs done"));
  EXPECT_EQ(lines_[1], "idem sim backoff: 100% of the runs done in 0s");
}

TEST(FormatLongDuration, PicksTheTwoLargestUnits) {
  EXPECT_EQ(FormatLongDuration(Millis(0)), "0s");
  EXPECT_EQ(FormatLongDuration(Millis(12'999)), "12s");
  EXPECT_EQ(FormatLongDuration(Millis(200'000)), "3m20s");
  EXPECT_EQ(FormatLongDuration(Millis(3'720'000)), "1h02m");
}

}  // namespace
}  // namespace idem::sim
