#include "idem/retry/duration.h"

#include <gtest/gtest.h>

namespace idem::retry {
namespace {

TEST(ParseDuration, ReadsEachUnit) {
  EXPECT_EQ(*ParseDuration("250ms"), Millis(250));
  EXPECT_EQ(*ParseDuration("2s"), Millis(2000));
  EXPECT_EQ(*ParseDuration("1m"), Millis(60'000));
  EXPECT_EQ(*ParseDuration("1h"), Millis(3'600'000));
  EXPECT_EQ(*ParseDuration("0"), Millis(0));
  EXPECT_EQ(*ParseDuration("0s"), Millis(0));
}

TEST(ParseDuration, ReadsFractionsAndCompoundForms) {
  EXPECT_EQ(*ParseDuration("1.5s"), Millis(1500));
  EXPECT_EQ(*ParseDuration("0.25h"), Millis(900'000));
  EXPECT_EQ(*ParseDuration("1m30s"), Millis(90'000));
  EXPECT_EQ(*ParseDuration("1h2m3s4ms"), Millis(3'723'004));
  EXPECT_EQ(*ParseDuration("1.9ms"), Millis(1));  // rounded down to whole milliseconds
}

TEST(ParseDuration, RejectsMalformedTextWithInvalidArgument) {
  for (const char* bad : {"", "-1s", "5", "5x", "ms", "1s2", "1.s.", " 1s", "1 s", "1S0"}) {
    absl::StatusOr<Millis> d = ParseDuration(bad);
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << "'" << bad << "'";
  }
}

TEST(ParseDuration, NegativeIsExplainedAsNegative) {
  EXPECT_NE(ParseDuration("-2s").status().message().find("negative"), std::string_view::npos);
}

TEST(ParseDuration, UnknownUnitIsNamed) {
  EXPECT_NE(ParseDuration("3d").status().message().find("unknown unit 'd'"),
            std::string_view::npos);
}

TEST(ParseDuration, RejectsValuesTooLargeInsteadOfOverflowing) {
  EXPECT_EQ(ParseDuration("99999999999999999999h").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDuration("300000000h").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseDuration("9999999999999s").status().code(), absl::StatusCode::kInvalidArgument);
}

// A duration is never read through a double, so no exponent can reach a double-to-integer cast
// (undefined behaviour beyond int64's range, which UBSan's float-cast-overflow reports).
TEST(ParseDuration, ExponentsAreRefusedSayingSo) {
  for (const char* bad : {"1e30s", "1e300ms", "1E3s", "1e+3s", "2.5e-1s"}) {
    const absl::Status s = ParseDuration(bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("exponents"), std::string_view::npos) << s;
  }
  for (const char* bad : {"infs", "nan", "1e"})
    EXPECT_EQ(ParseDuration(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
}

TEST(FormatDuration, WritesTheLargestExactUnitAndParsesBack) {
  EXPECT_EQ(FormatDuration(Millis(250)), "250ms");
  EXPECT_EQ(FormatDuration(Millis(2000)), "2s");
  EXPECT_EQ(FormatDuration(Millis(90'000)), "90s");
  EXPECT_EQ(FormatDuration(Millis(3'600'000)), "1h");
  EXPECT_EQ(FormatDuration(Millis(0)), "0");
  for (int64_t ms : {1, 999, 1000, 61'000, 7'200'000}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(Millis(ms))), Millis(ms));
  }
}

}  // namespace
}  // namespace idem::retry
