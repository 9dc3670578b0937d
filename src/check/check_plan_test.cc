#include "check/check_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace idem::check {
namespace {

using ::testing::HasSubstr;

TEST(SelectScenarios, NothingGivenMeansEveryScenarioInOrder) {
  absl::StatusOr<std::vector<std::string>> all = SelectScenarios("");
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, (std::vector<std::string>{"replay", "mismatch", "concurrent", "lost-answer",
                                            "no-key", "bad-key"}));
}

TEST(SelectScenarios, KeepsTheRunOrderWhateverTheListsOrder) {
  absl::StatusOr<std::vector<std::string>> some = SelectScenarios("bad-key, replay,replay");
  ASSERT_TRUE(some.ok()) << some.status();
  EXPECT_EQ(*some, (std::vector<std::string>{"replay", "bad-key"}));
}

TEST(SelectScenarios, RefusesAnUnknownNameOrAnEmptyList) {
  absl::StatusOr<std::vector<std::string>> unknown = SelectScenarios("replay,lost");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("'lost'"));
  EXPECT_THAT(std::string(unknown.status().message()), HasSubstr("lost-answer"));
  EXPECT_EQ(SelectScenarios(" , ,").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::check
