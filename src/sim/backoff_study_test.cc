#include "sim/backoff_study.h"

#include <gtest/gtest.h>

#include <map>

namespace idem::sim {
namespace {

// The study's findings at 100 clients, 50 runs, seed 1 (the documented command).
class BackoffStudyFindings : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    StudyConfig config;
    config.clients = {100};
    config.strategies = AllStrategies();
    config.runs = 50;
    config.seed = 1;
    absl::StatusOr<std::vector<StudyRow>> rows = RunBackoffStudy(config);
    ASSERT_TRUE(rows.ok()) << rows.status();
    for (const StudyRow& row : *rows) cells_[row.strategy] = row;
  }
  static const StudyRow& Cell(Strategy strategy) { return cells_.at(strategy); }

  static inline std::map<Strategy, StudyRow> cells_;
};

TEST_F(BackoffStudyFindings, FullAndEqualJitterCutTheWorkOfExponentialBackoffByMoreThanHalf) {
  const double exponential = Cell(Strategy::kExponential).writes;
  EXPECT_LT(Cell(Strategy::kFull).writes, exponential / 2);
  EXPECT_LT(Cell(Strategy::kEqual).writes, exponential / 2);
}

// Decorrelated jitter grows by about 1.5x per retry instead of 2x, so it retries more often
// than the other two; in this model it saves a little under half of exponential's work.
TEST_F(BackoffStudyFindings, DecorrelatedJitterCutsTheWorkOfExponentialBackoffByOverAThird) {
  EXPECT_LT(Cell(Strategy::kDecorrelated).writes, 0.6 * Cell(Strategy::kExponential).writes);
}

TEST_F(BackoffStudyFindings, ExponentialWithoutJitterTakesFarLongestOfTheBackoffStrategies) {
  const double exponential = Cell(Strategy::kExponential).time_ms;
  for (Strategy jittered : {Strategy::kFull, Strategy::kEqual, Strategy::kDecorrelated}) {
    EXPECT_GT(exponential, 1.5 * Cell(jittered).time_ms) << StrategyName(jittered);
  }
}

TEST_F(BackoffStudyFindings, NoBackoffDoesTheMostWorkAndTriplesFullJitters) {
  for (Strategy other :
       {Strategy::kExponential, Strategy::kFull, Strategy::kEqual, Strategy::kDecorrelated}) {
    EXPECT_GT(Cell(Strategy::kNone).writes, Cell(other).writes) << StrategyName(other);
  }
  EXPECT_GT(Cell(Strategy::kNone).writes, 3 * Cell(Strategy::kFull).writes);
}

TEST_F(BackoffStudyFindings, FullJitterDoesTheLeastWork) {
  for (Strategy other :
       {Strategy::kNone, Strategy::kExponential, Strategy::kEqual, Strategy::kDecorrelated}) {
    EXPECT_LT(Cell(Strategy::kFull).writes, Cell(other).writes) << StrategyName(other);
  }
}

TEST(BackoffStudy, RowsFollowClientCountsThenStrategiesInTheOrderGiven) {
  StudyConfig config;
  config.clients = {20, 5};
  config.strategies = {Strategy::kEqual, Strategy::kNone};
  config.runs = 3;
  absl::StatusOr<std::vector<StudyRow>> rows = RunBackoffStudy(config);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 4u);
  EXPECT_EQ((*rows)[0].clients, 20);
  EXPECT_EQ((*rows)[0].strategy, Strategy::kEqual);
  EXPECT_EQ((*rows)[1].strategy, Strategy::kNone);
  EXPECT_EQ((*rows)[2].clients, 5);
}

TEST(BackoffStudy, ProgressCountsEveryRunWeightedByItsClientsUpToTheWholeStudy) {
  StudyConfig config;
  config.clients = {20, 5};
  config.strategies = {Strategy::kEqual, Strategy::kNone};
  config.runs = 3;
  std::vector<std::pair<int64_t, int64_t>> seen;
  config.progress = [&seen](int64_t done, int64_t total) { seen.emplace_back(done, total); };
  ASSERT_TRUE(RunBackoffStudy(config).ok());
  ASSERT_EQ(seen.size(), 12u);  // 2 client counts x 2 strategies x 3 runs
  EXPECT_EQ(seen.front(), std::make_pair(int64_t{20}, int64_t{150}));
  EXPECT_EQ(seen.back(), std::make_pair(int64_t{150}, int64_t{150}));
}

TEST(BackoffStudy, SameSeedGivesTheSameMeans) {
  StudyConfig config;
  config.clients = {10, 30};
  config.strategies = AllStrategies();
  config.runs = 5;
  config.seed = 77;
  absl::StatusOr<std::vector<StudyRow>> a = RunBackoffStudy(config);
  absl::StatusOr<std::vector<StudyRow>> b = RunBackoffStudy(config);
  config.seed = 78;
  absl::StatusOr<std::vector<StudyRow>> c = RunBackoffStudy(config);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  bool any_difference = false;
  for (std::size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].writes, (*b)[i].writes);
    EXPECT_EQ((*a)[i].time_ms, (*b)[i].time_ms);
    any_difference = any_difference || (*a)[i].time_ms != (*c)[i].time_ms;
  }
  EXPECT_TRUE(any_difference);
}

TEST(BackoffStudy, RejectsEmptyOrZeroSettingsWithInvalidArgument) {
  StudyConfig config;
  config.clients = {10};
  config.strategies = AllStrategies();
  config.runs = 0;
  EXPECT_EQ(RunBackoffStudy(config).status().code(), absl::StatusCode::kInvalidArgument);
  config.runs = 1;
  config.clients = {};
  EXPECT_EQ(RunBackoffStudy(config).status().code(), absl::StatusCode::kInvalidArgument);
  config.clients = {10, 0};
  EXPECT_EQ(RunBackoffStudy(config).status().code(), absl::StatusCode::kInvalidArgument);
  config.clients = {10};
  config.strategies = {};
  EXPECT_EQ(RunBackoffStudy(config).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::sim
