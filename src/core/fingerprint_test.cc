#include "idem/fingerprint.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace idem {
namespace {

std::string Of(std::string_view method, std::string_view target, std::string_view body,
               const FingerprintOptions& options = {}, std::vector<Header> headers = {}) {
  return Fingerprint({method, target, body, std::move(headers)}, options);
}

// An 8-byte big-endian length, then the bytes: the framing the fingerprint documents.
std::string Framed(std::string_view field) {
  std::string out;
  for (int shift = 56; shift >= 0; shift -= 8) {
    out.push_back(static_cast<char>((field.size() >> shift) & 0xFF));
  }
  out.append(field);
  return out;
}

TEST(Sha256Hex, MatchesKnownDigests) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex(std::string_view("a\0b", 3)), Sha256Hex(std::string("a") + '\0' + "b"));
}

// Stored fingerprints must keep matching after an upgrade: this pins the exact framing.
TEST(Fingerprint, IsSha256OfLengthPrefixedVersionMethodTargetBodyAndHeaders) {
  const std::string zero_headers(8, '\0');
  EXPECT_EQ(Of("POST", "/v1/charges?x=1", R"({ "b": 1, "a": 2.0 })"),
            Sha256Hex(Framed("idem-fingerprint-v1") + Framed("POST") + Framed("/v1/charges?x=1") +
                      Framed("json") + Framed(R"({"a":2,"b":1})") + zero_headers));
  EXPECT_EQ(Of("POST", "/upload", "not json"),
            Sha256Hex(Framed("idem-fingerprint-v1") + Framed("POST") + Framed("/upload") +
                      Framed("raw") + Framed("not json") + zero_headers));
}

TEST(Fingerprint, IsSixtyFourLowercaseHexDigits) {
  const std::string fingerprint = Of("POST", "/", "");
  ASSERT_EQ(fingerprint.size(), 64u);
  EXPECT_EQ(fingerprint.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Fingerprint, FramesFieldsSoBoundariesCannotShift) {
  EXPECT_NE(Of("ab", "c", ""), Of("a", "bc", ""));
  EXPECT_NE(Of("POST", "/ab", "c"), Of("POST", "/a", "bc"));
  EXPECT_NE(Of("POST", "", "/a"), Of("POST", "/a", ""));
}

TEST(Fingerprint, DependsOnMethodPathAndQuery) {
  const std::string base = Of("POST", "/v1/charges?a=1", "{}");
  EXPECT_EQ(base, Of("POST", "/v1/charges?a=1", "{}"));
  EXPECT_NE(base, Of("PATCH", "/v1/charges?a=1", "{}"));
  EXPECT_NE(base, Of("post", "/v1/charges?a=1", "{}"));  // methods are case-sensitive
  EXPECT_NE(base, Of("POST", "/v1/charges?a=2", "{}"));
  EXPECT_NE(base, Of("POST", "/v1/charges", "{}"));
  EXPECT_NE(base, Of("POST", "/v1/refunds?a=1", "{}"));
}

TEST(Fingerprint, IgnoresJsonMemberOrderWhitespaceAndNumberSpelling) {
  EXPECT_EQ(Of("POST", "/t", R"({"amount":100,"currency":"eur"})"),
            Of("POST", "/t", "{\n  \"currency\" : \"eur\",\n  \"amount\" : 1.00e2\n}\n"));
  EXPECT_EQ(Of("POST", "/t", R"({"s":"\u00e9"})"), Of("POST", "/t", "{\"s\":\"\xC3\xA9\"}"));
}

TEST(Fingerprint, DependsOnJsonValuesAndArrayOrder) {
  EXPECT_NE(Of("POST", "/t", R"({"amount":100})"), Of("POST", "/t", R"({"amount":101})"));
  EXPECT_NE(Of("POST", "/t", R"({"amount":100})"), Of("POST", "/t", R"({"amount":"100"})"));
  EXPECT_NE(Of("POST", "/t", "[1,2]"), Of("POST", "/t", "[2,1]"));
}

// Regression: numbers were read as doubles before canonicalisation, so two bodies an upstream
// reads as different numbers (a 64-bit id and its neighbour) shared a fingerprint, and the second
// request under a key got the first one's stored answer instead of 422.
TEST(Fingerprint, TellsApartNumbersThatTheirDoubleCannotCarry) {
  const std::pair<const char*, const char*> pairs[] = {
      {R"({"account_id":1234567890123456789})", R"({"account_id":1234567890123456788})"},
      {"9007199254740993", "9007199254740992"},
      {"0.1", "0.10000000000000001"},
      {"1e-400", "0"},
      {"-1e-400", "1e-400"},
      {"[1.00000000000000000000000000000000000001]", "[1]"},
      {"18446744073709551616", "18446744073709552000"},
      {"1e-99999999999999999999", "0"},
  };
  for (const auto& [a, b] : pairs) EXPECT_NE(Of("POST", "/t", a), Of("POST", "/t", b)) << a;
}

// What a double carries exactly keeps the RFC 8785 equalities: one decimal value, one request.
TEST(Fingerprint, KeepsEverySpellingOfOneDecimalValueEqual) {
  const std::vector<std::vector<const char*>> groups = {
      {"1", "1.0", "1e0", "10e-1", "1.000", "0.1e1", "1E+0"},
      {"0", "-0", "0.0", "0e10", "-0.0e-5"},
      {"1234567890123456789", "1234567890123456789.0", "1.234567890123456789e18",
       "12345678901234567890e-1"},
      {"0.10000000000000001", "1.0000000000000001e-1", "0.100000000000000010"},
      {"1e-400", "10e-401", "0.1e-399"},
      {"1.5", "1.50", "15e-1"},
  };
  for (const auto& group : groups) {
    for (const char* spelling : group) {
      EXPECT_EQ(Of("POST", "/t", group.front()), Of("POST", "/t", spelling)) << spelling;
    }
  }
}

// A body whose every number its double carries exactly keeps the fingerprint it had before
// numbers were read exactly (stored keys still match); only the others changed.
TEST(Fingerprint, WritesANumberItsDoubleCannotCarryExactly) {
  const std::string zero_headers(8, '\0');
  const auto json = [&](std::string_view canonical) {
    return Sha256Hex(Framed("idem-fingerprint-v1") + Framed("POST") + Framed("/t") +
                     Framed("json") + Framed(canonical) + zero_headers);
  };
  EXPECT_EQ(Of("POST", "/t", R"({"a":1.50,"b":1E30,"c":-0,"d":0.000001,"e":123})"),
            json(R"({"a":1.5,"b":1e+30,"c":0,"d":0.000001,"e":123})"));
  EXPECT_EQ(Of("POST", "/t", R"({"id":1234567890123456789,"x":0.10000000000000001})"),
            json(R"({"id":1.234567890123456789E18,"x":1.0000000000000001E-1})"));
  EXPECT_EQ(Of("POST", "/t", "[1e-400,-9007199254740993]"),
            json("[1E-400,-9.007199254740993E15]"));
}

TEST(Fingerprint, HashesInvalidJsonAndOtherBodiesAsRawBytes) {
  // Not JSON: whitespace now matters.
  EXPECT_NE(Of("POST", "/t", "{\"a\":1"), Of("POST", "/t", "{\"a\": 1"));
  EXPECT_NE(Of("POST", "/t", "a=1&b=2"), Of("POST", "/t", "b=2&a=1"));
  // Duplicate names are not JSON that can be canonicalised either.
  EXPECT_NE(Of("POST", "/t", R"({"a":1,"a":2})"), Of("POST", "/t", R"({"a":1, "a":2})"));
  EXPECT_NE(Of("POST", "/t", std::string_view("\0\x01", 2)),
            Of("POST", "/t", std::string_view("\0\x02", 2)));
  EXPECT_NE(Of("POST", "/t", ""), Of("POST", "/t", " "));
}

TEST(Fingerprint, LeavesOutExcludedJsonPointers) {
  FingerprintOptions options;
  options.excluded_json_pointers = {"/client_time", "/meta/trace"};
  EXPECT_EQ(
      Of("POST", "/t", R"({"amount":1,"client_time":5,"meta":{"trace":"x","v":1}})", options),
      Of("POST", "/t", R"({"amount":1,"client_time":9,"meta":{"trace":"y","v":1}})", options));
  EXPECT_EQ(Of("POST", "/t", R"({"amount":1,"client_time":5})", options),
            Of("POST", "/t", R"({"amount":1})", options));
  EXPECT_NE(Of("POST", "/t", R"({"amount":1,"client_time":5})", options),
            Of("POST", "/t", R"({"amount":2,"client_time":5})", options));
  // Without the option the field counts.
  EXPECT_NE(Of("POST", "/t", R"({"amount":1,"client_time":5})"),
            Of("POST", "/t", R"({"amount":1,"client_time":9})"));
}

TEST(Fingerprint, IgnoresMalformedExcludedPointers) {
  FingerprintOptions options;
  options.excluded_json_pointers = {"client_time", "/a~2", "/drop"};
  EXPECT_EQ(Of("POST", "/t", R"({"client_time":1,"drop":1})", options),
            Of("POST", "/t", R"({"client_time":1})"));
}

TEST(Fingerprint, IncludesConfiguredHeadersCaseInsensitively) {
  FingerprintOptions options;
  options.included_headers = {"X-Account"};
  const std::string base = Of("POST", "/t", "{}", options, {{"x-account", "a1"}});
  EXPECT_EQ(base, Of("POST", "/t", "{}", options, {{"X-ACCOUNT", "a1"}, {"Other", "1"}}));
  EXPECT_NE(base, Of("POST", "/t", "{}", options, {{"x-account", "A1"}}));  // values as given
  EXPECT_NE(base, Of("POST", "/t", "{}", options, {{"x-account", "a2"}}));
  EXPECT_NE(base, Of("POST", "/t", "{}"));  // an included header changes the fingerprint
}

TEST(Fingerprint, IgnoresHeadersThatAreNotIncluded) {
  EXPECT_EQ(Of("POST", "/t", "{}", {}, {{"X-Request-Id", "1"}}),
            Of("POST", "/t", "{}", {}, {{"X-Request-Id", "2"}}));
}

TEST(Fingerprint, TellsAnAbsentHeaderFromAnEmptyOne) {
  FingerprintOptions options;
  options.included_headers = {"x-a"};
  EXPECT_NE(Of("POST", "/t", "{}", options, {}), Of("POST", "/t", "{}", options, {{"x-a", ""}}));
}

TEST(Fingerprint, TakesIncludedHeadersInAFixedOrder) {
  FingerprintOptions forward;
  forward.included_headers = {"x-a", "x-b"};
  FingerprintOptions backward;
  backward.included_headers = {"X-B", "x-a", "x-b"};
  const std::vector<Header> headers = {{"x-b", "2"}, {"x-a", "1"}};
  EXPECT_EQ(Of("POST", "/t", "{}", forward, headers), Of("POST", "/t", "{}", backward, headers));
  EXPECT_EQ(Of("POST", "/t", "{}", forward, headers),
            Of("POST", "/t", "{}", forward, {{"x-a", "1"}, {"x-b", "2"}}));
  // Swapping values between the two headers is a different request.
  EXPECT_NE(Of("POST", "/t", "{}", forward, headers),
            Of("POST", "/t", "{}", forward, {{"x-a", "2"}, {"x-b", "1"}}));
}

TEST(Fingerprint, KeepsEveryValueOfARepeatedHeaderInOrder) {
  FingerprintOptions options;
  options.included_headers = {"x-a"};
  const std::string both = Of("POST", "/t", "{}", options, {{"x-a", "1"}, {"x-a", "2"}});
  EXPECT_NE(both, Of("POST", "/t", "{}", options, {{"x-a", "2"}, {"x-a", "1"}}));
  EXPECT_NE(both, Of("POST", "/t", "{}", options, {{"x-a", "1"}}));
  EXPECT_NE(both, Of("POST", "/t", "{}", options, {{"x-a", "12"}}));
}

TEST(ValidateFingerprintOptions, AcceptsWellFormedPointersAndHeaderNames) {
  FingerprintOptions options;
  options.excluded_json_pointers = {"/a", "/a~1b/0", "/"};
  options.included_headers = {"X-Account", "x_tenant.id"};
  EXPECT_TRUE(ValidateFingerprintOptions(options).ok());
}

TEST(ValidateFingerprintOptions, RejectsMalformedPointers) {
  FingerprintOptions options;
  options.excluded_json_pointers = {"/ok", "missing-slash"};
  EXPECT_EQ(ValidateFingerprintOptions(options).code(), absl::StatusCode::kInvalidArgument);
  options.excluded_json_pointers = {""};
  EXPECT_EQ(ValidateFingerprintOptions(options).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateFingerprintOptions, RejectsInvalidHeaderNames) {
  for (const char* bad : {"", "X Account", "x:a", "caf\xC3\xA9"}) {
    FingerprintOptions options;
    options.included_headers = {bad};
    EXPECT_EQ(ValidateFingerprintOptions(options).code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

}  // namespace
}  // namespace idem
