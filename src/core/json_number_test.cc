#include "core/json_number.h"

#include <gtest/gtest.h>

#include <charconv>
#include <string>

namespace idem::core {
namespace {

std::string Exact(std::string_view text) {
  double value = 0;
  std::from_chars(text.data(), text.data() + text.size(), value);  // 0 when out of range
  std::string out;
  AppendExactNumber(text, value, out);
  return out;
}

TEST(DecimalOf, ReadsSignDigitsAndExponentExactly) {
  EXPECT_EQ(DecimalOf("123"), (Decimal{false, "123", 3}));
  EXPECT_EQ(DecimalOf("-0.00120e2"), (Decimal{true, "12", 0}));
  EXPECT_EQ(DecimalOf("1200"), (Decimal{false, "12", 4}));
  EXPECT_EQ(DecimalOf("1E-400"), (Decimal{false, "1", -399}));
  EXPECT_EQ(DecimalOf("12345678901234567890e+0010"), (Decimal{false, "1234567890123456789", 30}));
  EXPECT_EQ(DecimalOf("-0.000e99999999999999999999"), Decimal{});  // zero, never negative
  EXPECT_EQ(DecimalOf("1e999999999999999"), (Decimal{false, "1", 1000000000000000}));
  EXPECT_EQ(DecimalOf("1e1000000000000000"), std::nullopt);
}

TEST(ShortestDecimalOf, GivesTheDigitsEcmaScriptWrites) {
  EXPECT_EQ(ShortestDecimalOf(0.1), (Decimal{false, "1", 0}));
  EXPECT_EQ(ShortestDecimalOf(-1e30), (Decimal{true, "1", 31}));
  EXPECT_EQ(ShortestDecimalOf(9007199254740993.0), (Decimal{false, "9007199254740992", 16}));
  EXPECT_EQ(ShortestDecimalOf(-0.0), Decimal{});
  EXPECT_EQ(ShortestDecimalOf(5e-324), (Decimal{false, "5", -323}));
}

// A number its double carries exactly is written as RFC 8785 writes it.
TEST(AppendExactNumber, WritesTheRfc8785FormWhenItIsExact) {
  const std::pair<const char*, const char*> cases[] = {
      {"0", "0"},
      {"-0", "0"},
      {"-0.0e3", "0"},
      {"42", "42"},
      {"-42", "-42"},
      {"1.50", "1.5"},
      {"15e-1", "1.5"},
      {"1E30", "1e+30"},
      {"0.000001", "0.000001"},
      {"1e-7", "1e-7"},
      {"100.0", "100"},
      {"9007199254740992", "9007199254740992"},
      {"5e-324", "5e-324"},
      {"123456789012345", "123456789012345"},
      {"1234567890123456800", "1234567890123456800"},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(Exact(text), expected) << text;
}

// Any other number keeps its exact value, in a form with a capital E that RFC 8785 never writes.
TEST(AppendExactNumber, WritesTheExactValueWhenTheDoubleRoundsIt) {
  const std::pair<const char*, const char*> cases[] = {
      {"1234567890123456789", "1.234567890123456789E18"},
      {"1234567890123456788", "1.234567890123456788E18"},
      {"9007199254740993", "9.007199254740993E15"},
      {"-9007199254740993.0", "-9.007199254740993E15"},
      {"0.10000000000000001", "1.0000000000000001E-1"},
      {"1e-400", "1E-400"},
      {"-2.5e-400", "-2.5E-400"},
      {"2.4703282292062328e-324", "2.4703282292062328E-324"},
      {"18446744073709551616", "1.8446744073709551616E19"},
  };
  for (const auto& [text, expected] : cases) EXPECT_EQ(Exact(text), expected) << text;
}

// An exponent too large to compute with: the text as sent, which has the number's value too.
TEST(AppendExactNumber, WritesAnAbsurdExponentAsSent) {
  EXPECT_EQ(Exact("1e-99999999999999999999"), "1e-99999999999999999999");
}

}  // namespace
}  // namespace idem::core
