#include "check/effect_counter.h"

#include <gtest/gtest.h>

namespace idem::check {
namespace {

TEST(ParseCount, ReadsAPlainIntegerOrAJsonNumber) {
  EXPECT_EQ(ParseCount("42", "").value_or(-1), 42);
  EXPECT_EQ(ParseCount(" 7\r\n", "").value_or(-1), 7);
  EXPECT_EQ(ParseCount("3.0", "").value_or(-1), 3);
  EXPECT_EQ(ParseCount("0", "").value_or(-1), 0);
}

TEST(ParseCount, ReadsTheNumberAtAJsonPointer) {
  const std::string stats = R"({"calls":5,"charges":3,"nested":{"a/b":[1,9]}})";
  EXPECT_EQ(ParseCount(stats, "/charges").value_or(-1), 3);
  EXPECT_EQ(ParseCount(stats, "/nested/a~1b/1").value_or(-1), 9);
}

TEST(ParseCount, RefusesWhatIsNotAWholeCount) {
  for (const auto& [body, pointer] :
       std::vector<std::pair<std::string, std::string>>{{"many", ""},
                                                        {"-1", ""},
                                                        {"2.5", ""},
                                                        {R"({"charges":3})", ""},
                                                        {R"({"charges":3})", "/calls"},
                                                        {R"({"charges":"3"})", "/charges"},
                                                        {"3", "/charges"},
                                                        {R"({"charges":3})", "charges"}}) {
    absl::StatusOr<int64_t> count = ParseCount(body, pointer);
    EXPECT_EQ(count.status().code(), absl::StatusCode::kInvalidArgument)
        << body << " at '" << pointer << "'";
  }
}

}  // namespace
}  // namespace idem::check
