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
                                            "retention", "no-key", "bad-key"}));
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

TEST(ParseKeyFormat, KnowsSfTokenAndRawOnly) {
  EXPECT_EQ(*ParseKeyFormat("sf"), KeyFormat::kSfString);
  EXPECT_EQ(*ParseKeyFormat("token"), KeyFormat::kSfToken);
  EXPECT_EQ(*ParseKeyFormat("raw"), KeyFormat::kRaw);
  absl::StatusOr<KeyFormat> bad = ParseKeyFormat("quoted");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'quoted'"));
}

TEST(IsKeyed, NoKeyAndBadKeyAreNot) {
  EXPECT_TRUE(IsKeyed("retention"));
  EXPECT_TRUE(IsKeyed("concurrent"));
  EXPECT_FALSE(IsKeyed("no-key"));
  EXPECT_FALSE(IsKeyed("bad-key"));
}

}  // namespace
}  // namespace idem::check
