#include "idem/canonical_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>

namespace idem {
namespace {

using ::testing::HasSubstr;

std::string Canonical(std::string_view json, const CanonicalJsonOptions& options = {}) {
  absl::StatusOr<std::string> result = CanonicalizeJson(json, options);
  EXPECT_TRUE(result.ok()) << result.status() << " for " << json;
  return result.ok() ? *result : std::string("<error>");
}

absl::StatusCode CodeOf(std::string_view json, const CanonicalJsonOptions& options = {}) {
  return CanonicalizeJson(json, options).status().code();
}

// RFC 8785 Appendix B: IEEE-754 bit patterns and their ECMAScript serialisation.
TEST(FormatJsonNumber, MatchesRfc8785AppendixBTable) {
  struct Row {
    std::uint64_t bits;
    const char* expected;
  };
  const Row rows[] = {
      {0x0000000000000000, "0"},
      {0x8000000000000000, "0"},
      {0x0000000000000001, "5e-324"},
      {0x8000000000000001, "-5e-324"},
      {0x7fefffffffffffff, "1.7976931348623157e+308"},
      {0xffefffffffffffff, "-1.7976931348623157e+308"},
      {0x4340000000000000, "9007199254740992"},
      {0xc340000000000000, "-9007199254740992"},
      {0x4430000000000000, "295147905179352830000"},
      {0x44b52d02c7e14af5, "9.999999999999997e+22"},
      {0x44b52d02c7e14af6, "1e+23"},
      {0x44b52d02c7e14af7, "1.0000000000000001e+23"},
      {0x444b1ae4d6e2ef4e, "999999999999999700000"},
      {0x444b1ae4d6e2ef4f, "999999999999999900000"},
      {0x444b1ae4d6e2ef50, "1e+21"},
      {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
      {0x3eb0c6f7a0b5ed8d, "0.000001"},
      {0x41b3de4355555553, "333333333.3333332"},
      {0x41b3de4355555554, "333333333.33333325"},
      {0x41b3de4355555555, "333333333.3333333"},
      {0x41b3de4355555556, "333333333.3333334"},
      {0x41b3de4355555557, "333333333.33333343"},
      {0xbecbf647612f3696, "-0.0000033333333333333333"},
      {0x43143ff3c1cb0959, "1424953923781206.2"},  // ties round to even
  };
  for (const Row& row : rows) {
    EXPECT_EQ(FormatJsonNumber(std::bit_cast<double>(row.bits)), row.expected)
        << std::hex << row.bits;
  }
}

TEST(FormatJsonNumber, UsesExponentFromOneE21AndBelowOneEMinus6) {
  EXPECT_EQ(FormatJsonNumber(1e20), "100000000000000000000");
  EXPECT_EQ(FormatJsonNumber(1e21), "1e+21");
  EXPECT_EQ(FormatJsonNumber(1.5e21), "1.5e+21");
  EXPECT_EQ(FormatJsonNumber(1e-6), "0.000001");
  EXPECT_EQ(FormatJsonNumber(1e-7), "1e-7");
  EXPECT_EQ(FormatJsonNumber(-1.25e-7), "-1.25e-7");
  EXPECT_EQ(FormatJsonNumber(1e30), "1e+30");
  EXPECT_EQ(FormatJsonNumber(123.456), "123.456");
  EXPECT_EQ(FormatJsonNumber(-42), "-42");
}

// Property: the text reads back as the same double, for random finite bit patterns.
TEST(FormatJsonNumber, RoundTripsRandomDoubles) {
  std::mt19937_64 rng(8785);
  for (int i = 0; i < 50000; ++i) {
    const double value = std::bit_cast<double>(rng());
    if (!std::isfinite(value)) continue;
    const std::string text = FormatJsonNumber(value);
    double back = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), back);
    ASSERT_EQ(error, std::errc()) << text;
    ASSERT_EQ(end, text.data() + text.size()) << text;
    ASSERT_EQ(back, value) << text;
  }
}

TEST(FormatJsonNumber, WritesSafeIntegersAsPlainDigits) {
  std::mt19937_64 rng(53);
  for (int i = 0; i < 100000; ++i) {
    const std::int64_t n = static_cast<std::int64_t>(rng() >> (11 + i % 53)) * (i % 2 ? -1 : 1);
    ASSERT_EQ(FormatJsonNumber(static_cast<double>(n)), std::to_string(n));
  }
  EXPECT_EQ(FormatJsonNumber(9007199254740991.0), "9007199254740991");
}

// Each number goes through the parser: the text is read as the nearest double, then written.
TEST(CanonicalizeJson, WritesNumbersAsEcmaScriptDoubles) {
  const struct {
    const char* input;
    const char* expected;
  } cases[] = {
      {"1e+30", "1e+30"},
      {"1E30", "1e+30"},
      {"4.50", "4.5"},
      {"2e-3", "0.002"},
      {"0.002", "0.002"},
      {"1e-7", "1e-7"},
      {"0.0000001", "1e-7"},
      {"333333333.3333332", "333333333.3333332"},
      {"333333333.33333329", "333333333.3333333"},
      {"9007199254740993", "9007199254740992"},  // beyond 2^53: rounded like JavaScript
      {"-9007199254740993", "-9007199254740992"},
      {"18446744073709551616", "18446744073709552000"},  // beyond uint64
      {"-0", "0"},
      {"-0.0", "0"},
      {"295147905179352830000", "295147905179352830000"},
      {"1e21", "1e+21"},
      {"5e-324", "5e-324"},
      {"2.4703282292062328e-324", "5e-324"},  // rounds up to the smallest subnormal
      {"1e-400", "0"},                        // below the smallest double: zero
      {"-1e-400", "0"},
      {"0.0000000000000000000000000000000000000000000000000000000000000000000000000000000"
       "0000000000000000000000000000000000000000000000000000000000000000000000000000000"
       "0000000000000000000000000000000000000000000000000000000000000000000000000000000"
       "0000000000000000000000000000000000000000000000000000000000000000000000000000000"
       "000000001",
       "0"},
      {"1.7976931348623157e+308", "1.7976931348623157e+308"},
      {"0.000000000000000000000000001", "1e-27"},
      {"100", "100"},
      {"1.0", "1"},
  };
  for (const auto& c : cases) EXPECT_EQ(Canonical(c.input), c.expected) << c.input;
}

TEST(CanonicalizeJson, RefusesNumbersBeyondTheLargestDouble) {
  absl::StatusOr<std::string> result = CanonicalizeJson("[1e400]");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("1e400 is too large"));
  EXPECT_EQ(CodeOf("-1.8e308"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf("1" + std::string(400, '0')), absl::StatusCode::kInvalidArgument);
}

// With exact_numbers, a number its double would round keeps its exact value (a capital E marks
// the form); any other is written as RFC 8785 writes it.
TEST(CanonicalizeJson, ExactNumbersKeepsTheValueOfANumberItsDoubleWouldRound) {
  CanonicalJsonOptions exact;
  exact.exact_numbers = true;
  EXPECT_EQ(Canonical(R"({"b":1.50,"a":1234567890123456789})", exact),
            R"({"a":1.234567890123456789E18,"b":1.5})");
  EXPECT_EQ(Canonical("[0.10000000000000001, 1e-400, -0, 1E30, 9007199254740993, 4.50]", exact),
            "[1.0000000000000001E-1,1E-400,0,1e+30,9.007199254740993E15,4.5]");
  EXPECT_EQ(CodeOf("[1e400]", exact), absl::StatusCode::kInvalidArgument);
  const std::string once = Canonical("[12345678901234567890123, 0.3e-400, 2.5]", exact);
  EXPECT_EQ(Canonical(once, exact), once);
  // Without the option: RFC 8785, every number as its double.
  EXPECT_EQ(Canonical("[1234567890123456789, 0.10000000000000001, 1e-400]"),
            "[1234567890123456800,0.1,0]");
}

// RFC 8785 §3.2.4 (and its published test data, values.json): the whole transformation.
TEST(CanonicalizeJson, MatchesRfc8785ExampleObject) {
  const std::string input = R"({
    "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
    "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
    "literals": [null, true, false]
  })";
  EXPECT_EQ(Canonical(input),
            "{\"literals\":[null,true,false],"
            "\"numbers\":[333333333.3333333,1e+30,4.5,0.002,1e-27],"
            "\"string\":\"\xE2\x82\xAC$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}");
}

// RFC 8785 §3.2.3: names compare as UTF-16 code units, so U+1F600 (D83D DE00) sorts before
// U+FB33 although its UTF-8 bytes (F0 ...) sort after (EF ...).
TEST(CanonicalizeJson, SortsMembersByUtf16CodeUnitsNotUtf8Bytes) {
  const std::string input = R"({
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\ud83d\ude00": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis"
  })";
  EXPECT_EQ(Canonical(input),
            "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\xC2\x80\":\"Control\","
            "\"\xC3\xB6\":\"Latin Small Letter O With Diaeresis\",\"\xE2\x82\xAC\":\"Euro Sign\","
            "\"\xF0\x9F\x98\x80\":\"Emoji: Grinning Face\","
            "\"\xEF\xAC\xB3\":\"Hebrew Letter Dalet With Dagesh\"}");
}

// The published test data's structures.json: nested objects sorted at every level.
TEST(CanonicalizeJson, SortsNestedObjectsAndDropsWhitespace) {
  const std::string input = R"({
    "1": {"f": {"f": "hi","F": 5} ,"\n": 56.0},
    "10": { },
    "": "empty",
    "a": { },
    "111": [ { } ],
    "A": { }
  })";
  EXPECT_EQ(Canonical(input),
            R"({"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}})");
}

TEST(CanonicalizeJson, EscapesOnlyQuoteBackslashAndControlCharacters) {
  EXPECT_EQ(Canonical(R"("\b\f\n\r\t\"\\\/")"), R"("\b\f\n\r\t\"\\/")");
  EXPECT_EQ(Canonical(R"("\u0000\u001F\u0001")"), R"("\u0000\u001f\u0001")");
  // DEL, U+2028 and non-ASCII stay literal UTF-8.
  EXPECT_EQ(Canonical(R"("\u007f\u2028\u00e9")"), "\"\x7F\xE2\x80\xA8\xC3\xA9\"");
  EXPECT_EQ(Canonical("\"caf\xC3\xA9\""), "\"caf\xC3\xA9\"");
}

TEST(CanonicalizeJson, KeepsArrayOrderAndLiterals) {
  EXPECT_EQ(Canonical(" [ 3 , 1 , 2 , null , true , false , \"x\" ] "),
            R"([3,1,2,null,true,false,"x"])");
  EXPECT_EQ(Canonical("true"), "true");
  EXPECT_EQ(Canonical("\"\""), "\"\"");
  EXPECT_EQ(Canonical("{}"), "{}");
}

TEST(CanonicalizeJson, RefusesDuplicateMemberNames) {
  absl::StatusOr<std::string> result = CanonicalizeJson(R"({"a":1,"b":2,"a":3})");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("member \"a\" twice"));
  // Same name written with an escape is still the same name.
  EXPECT_EQ(CodeOf(R"({"a":1,"\u0061":2})"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(R"({"x":{"a":1,"a":1}})"), absl::StatusCode::kInvalidArgument);
  // The same name in two different objects is fine.
  EXPECT_EQ(Canonical(R"({"x":{"a":1},"y":{"a":2}})"), R"({"x":{"a":1},"y":{"a":2}})");
}

TEST(CanonicalizeJson, RefusesInvalidJson) {
  for (const char* bad : {"",        " ",        "{",       "[1,]",       "{\"a\":1,}",
                          "{'a':1}", "[1] [2]",  "[1] x",   "NaN",        "Infinity",
                          "01",      "1.",       ".5",      "+1",         "/* c */ 1",
                          "\"\\x\"", "\"a\nb\"", "{\"a\"}", "[\"\xC3\"]", "\"\xED\xA0\x80\""}) {
    EXPECT_EQ(CodeOf(bad), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CanonicalizeJson, RefusesLoneSurrogateEscapes) {
  EXPECT_EQ(CodeOf(R"("\ud800")"), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(R"("\udc00x")"), absl::StatusCode::kInvalidArgument);
}

TEST(CanonicalizeJson, RefusesNestingDeeperThanMaxDepth) {
  CanonicalJsonOptions options;
  options.max_depth = 3;
  EXPECT_EQ(Canonical("[[[1]]]", options), "[[[1]]]");
  EXPECT_EQ(CodeOf("[[[[1]]]]", options), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(std::string(65, '[') + std::string(65, ']')),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Canonical(std::string(64, '[') + std::string(64, ']')),
            std::string(64, '[') + std::string(64, ']'));
}

TEST(CanonicalizeJson, LeavesOutValuesNamedByExcludedPointers) {
  CanonicalJsonOptions options;
  options.excluded_pointers = {"/meta/request_id", "/items/1", "/a~1b", "/m~0n", "/absent/x"};
  EXPECT_EQ(Canonical(R"({"meta":{"request_id":"r1","user":"u"},"items":[10,20,30],
                          "a/b":1,"m~n":2,"keep":3})",
                      options),
            R"({"items":[10,30],"keep":3,"meta":{"user":"u"}})");
}

TEST(CanonicalizeJson, ExcludesMembersOfObjectsInsideArrays) {
  CanonicalJsonOptions options;
  options.excluded_pointers = {"/items/1/note"};
  EXPECT_EQ(Canonical(R"({"items":[{"note":"a","n":1},{"note":"b","n":2}]})", options),
            R"({"items":[{"n":1,"note":"a"},{"n":2}]})");
}

TEST(CanonicalizeJson, ResolvesEveryPointerAgainstTheInputWhateverTheirOrder) {
  CanonicalJsonOptions forward;
  forward.excluded_pointers = {"/a/0", "/a/1"};
  CanonicalJsonOptions backward;
  backward.excluded_pointers = {"/a/1", "/a/0"};
  EXPECT_EQ(Canonical(R"({"a":[1,2,3]})", forward), R"({"a":[3]})");
  EXPECT_EQ(Canonical(R"({"a":[1,2,3]})", backward), R"({"a":[3]})");
}

TEST(CanonicalizeJson, MatchesArrayIndexTokensOnlyInCanonicalDecimalForm) {
  CanonicalJsonOptions options;
  options.excluded_pointers = {"/a/01", "/a/-", "/a/x"};
  EXPECT_EQ(Canonical(R"({"a":[1,2]})", options), R"({"a":[1,2]})");
  // A numeric token names an object member too.
  options.excluded_pointers = {"/0"};
  EXPECT_EQ(Canonical(R"({"0":1,"1":2})", options), R"({"1":2})");
}

TEST(CanonicalizeJson, ExcludesAWholeSubtreeAndTheEmptyName) {
  CanonicalJsonOptions options;
  options.excluded_pointers = {"/x", "/x/y", "/"};
  EXPECT_EQ(Canonical(R"({"x":{"y":1,"z":2},"":0,"w":1})", options), R"({"w":1})");
}

TEST(CanonicalizeJson, RefusesMalformedPointers) {
  for (const char* bad : {"", "a", "a/b", "/a~", "/a~2", "/~x"}) {
    CanonicalJsonOptions options;
    options.excluded_pointers = {bad};
    EXPECT_EQ(CodeOf("{}", options), absl::StatusCode::kInvalidArgument) << bad;
  }
  CanonicalJsonOptions options;
  options.excluded_pointers = {"meta"};
  EXPECT_THAT(CanonicalizeJson("{}", options).status().message(), HasSubstr("must start with '/'"));
}

TEST(CanonicalizeJson, IsIdempotent) {
  const std::string once = Canonical(R"({"b":[1.50,{"d":1e2,"c":"\u00e9"}],"a":-0})");
  EXPECT_EQ(once, "{\"a\":0,\"b\":[1.5,{\"c\":\"\xC3\xA9\",\"d\":100}]}");
  EXPECT_EQ(Canonical(once), once);
}

}  // namespace
}  // namespace idem
