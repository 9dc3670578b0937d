#include "idem/key.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace idem {
namespace {

using ::testing::HasSubstr;

std::string Parsed(std::string_view header) {
  absl::StatusOr<std::string> key = ParseIdempotencyKey(header);
  EXPECT_TRUE(key.ok()) << key.status() << " for [" << header << "]";
  return key.ok() ? *key : std::string("<error>");
}

// Expects InvalidArgument with a message containing `what`.
void ExpectRejected(std::string_view header, std::string_view what) {
  absl::StatusOr<std::string> key = ParseIdempotencyKey(header);
  EXPECT_EQ(key.status().code(), absl::StatusCode::kInvalidArgument) << "[" << header << "]";
  EXPECT_THAT(key.status().message(), HasSubstr(std::string(what))) << "[" << header << "]";
}

TEST(ParseIdempotencyKey, AcceptsAStructuredFieldsString) {
  EXPECT_EQ(Parsed(R"("abc")"), "abc");
  EXPECT_EQ(Parsed(R"("8e03978e-40d5-43e8-bc93-6894a57f9324")"),
            "8e03978e-40d5-43e8-bc93-6894a57f9324");
  EXPECT_EQ(Parsed(R"k("a,b;c=d(e)")k"), "a,b;c=d(e)");  // anything visible inside quotes
}

TEST(ParseIdempotencyKey, ResolvesQuoteAndBackslashEscapes) {
  EXPECT_EQ(Parsed(R"("a\"b")"), "a\"b");
  EXPECT_EQ(Parsed(R"("a\\b")"), "a\\b");
  EXPECT_EQ(Parsed(R"("\\\"")"), "\\\"");
}

TEST(ParseIdempotencyKey, AcceptsABareToken) {
  EXPECT_EQ(Parsed("abc"), "abc");
  EXPECT_EQ(Parsed("order:42/retry.1"), "order:42/retry.1");
  EXPECT_EQ(Parsed("*!#$%&'+-.^_`|~"), "*!#$%&'+-.^_`|~");
}

TEST(ParseIdempotencyKey, AcceptsABareTokenStartingWithADigitSuchAsAUuid) {
  EXPECT_EQ(Parsed("8e03978e-40d5-43e8-bc93-6894a57f9324"), "8e03978e-40d5-43e8-bc93-6894a57f9324");
  EXPECT_EQ(Parsed("12345"), "12345");
}

TEST(ParseIdempotencyKey, TrimsSpacesAndTabsAroundTheValue) {
  EXPECT_EQ(Parsed("  abc \t"), "abc");
  EXPECT_EQ(Parsed("\t\"abc\"  "), "abc");
}

TEST(ParseIdempotencyKey, AcceptsExactly255Characters) {
  EXPECT_EQ(Parsed(std::string(255, 'k')), std::string(255, 'k'));
  EXPECT_EQ(Parsed("\"" + std::string(255, 'k') + "\""), std::string(255, 'k'));
  // The limit counts the key, not its escapes.
  EXPECT_EQ(Parsed("\"" + std::string(254, 'k') + "\\\\\""), std::string(254, 'k') + "\\");
}

TEST(ParseIdempotencyKey, RejectsAnEmptyValueOrKey) {
  ExpectRejected("", "is empty");
  ExpectRejected("   ", "is empty");
  ExpectRejected(R"("")", "is empty");
}

TEST(ParseIdempotencyKey, RejectsMoreThan255Characters) {
  ExpectRejected(std::string(256, 'k'), "256 characters long; the limit is 255");
  ExpectRejected("\"" + std::string(300, 'k') + "\"", "300 characters long; the limit is 255");
}

TEST(ParseIdempotencyKey, RejectsAList) {
  ExpectRejected(R"("a", "b")", "list");
  ExpectRejected(R"("a","b")", "list");
  ExpectRejected("a, b", "list");
  ExpectRejected("a ,b", "list");
  ExpectRejected(", a", "list");
  ExpectRejected(R"("a" , "b")", "list");
}

TEST(ParseIdempotencyKey, RejectsParameters) {
  ExpectRejected(R"("abc";x=1)", "parameters");
  ExpectRejected("abc;x=1", "parameters");
  ExpectRejected("abc ;x", "parameters");
  ExpectRejected(R"("abc" ;x)", "parameters");
}

TEST(ParseIdempotencyKey, RejectsControlCharacters) {
  ExpectRejected(std::string("ab\0c", 4), "control character 0x00 at position 2");
  ExpectRejected("\"a\nb\"", "control character 0x0A at position 2");
  ExpectRejected("a\tb", "control character 0x09 at position 1");
  ExpectRejected("ab\x7F", "control character 0x7F at position 2");
}

TEST(ParseIdempotencyKey, RejectsNonAscii) {
  ExpectRejected("caf\xC3\xA9", "non-ASCII byte 0xC3 at position 3");
  ExpectRejected("\"caf\xC3\xA9\"", "non-ASCII byte 0xC3 at position 4");
}

// RFC 8941 allows spaces in an sf-string, but a key is visible ASCII: "a b" is refused so that
// every accepted key can be stored and compared as the same visible text.
TEST(ParseIdempotencyKey, RejectsASpaceInsideTheKey) {
  ExpectRejected(R"("a b")", "space at position 2");
  ExpectRejected("a b", "space at position 1");
}

TEST(ParseIdempotencyKey, RejectsAnUnterminatedString) {
  ExpectRejected(R"("abc)", "unterminated");
  ExpectRejected(R"(")", "unterminated");
  ExpectRejected(R"("abc\")", "unterminated");
  ExpectRejected(R"("abc\)", "unterminated");
}

TEST(ParseIdempotencyKey, RejectsEscapesOtherThanQuoteAndBackslash) {
  ExpectRejected(R"("a\nb")", "invalid escape at position 2");
  ExpectRejected(R"("\u0041")", "invalid escape");
  ExpectRejected(R"("a\/b")", "invalid escape");
}

TEST(ParseIdempotencyKey, RejectsCharactersABareKeyCannotHold) {
  ExpectRejected("abc=", "unexpected character '=' at position 3");
  ExpectRejected("a\"b", "unexpected character '\"' at position 1");
  ExpectRejected("(abc)", "starts with '('");
  ExpectRejected("@abc", "starts with '@'");
  ExpectRejected(R"("abc"def)", "unexpected character 'd' at position 5");
  ExpectRejected(R"("a" "b")", "unexpected character '\"' at position 4");
}

TEST(ValidateKey, AcceptsOneTo255VisibleAsciiCharacters) {
  EXPECT_TRUE(ValidateKey("k").ok());
  EXPECT_TRUE(ValidateKey(std::string(255, '~')).ok());
  EXPECT_TRUE(ValidateKey("a\"b\\c,d;e=f").ok());
  std::string all;
  for (char c = 0x21; c <= 0x7E; ++c) all.push_back(c);
  EXPECT_TRUE(ValidateKey(all).ok());
}

TEST(ValidateKey, RejectsEmptyLongSpacesControlsAndNonAscii) {
  EXPECT_EQ(ValidateKey("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateKey(std::string(256, 'k')).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateKey("a b").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateKey("a\x1F").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateKey("\x80").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ValidateKey("ab\x7F").message(), HasSubstr("control character 0x7F at position 2"));
}

TEST(ValidateScope, AcceptsAnEmptyTenantAndUtf8Tenants) {
  EXPECT_TRUE(ValidateScope({"", "k"}).ok());
  EXPECT_TRUE(ValidateScope({"acme \xC3\xA9t\xC3\xA9", "k"}).ok());
  EXPECT_TRUE(ValidateScope({std::string(255, 't'), "k"}).ok());
}

TEST(ValidateScope, RejectsAnInvalidKey) {
  EXPECT_EQ(ValidateScope({"t", ""}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateScope({"t", "a b"}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateScope, RejectsATenantLongerThan255Bytes) {
  absl::Status status = ValidateScope({std::string(256, 't'), "k"});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("tenant is 256 bytes long; the limit is 255"));
  // Bytes, not characters: 128 two-byte characters are 256 bytes.
  std::string wide;
  for (int i = 0; i < 128; ++i) wide += "\xC3\xA9";
  EXPECT_EQ(ValidateScope({wide, "k"}).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateScope, RejectsATenantWithInvalidUtf8OrControlCharacters) {
  EXPECT_THAT(ValidateScope({"ab\xC3", "k"}).message(), HasSubstr("invalid UTF-8 at byte 2"));
  EXPECT_EQ(ValidateScope({"\xC0\xAF", "k"}).code(),
            absl::StatusCode::kInvalidArgument);  // overlong
  EXPECT_EQ(ValidateScope({"\xED\xA0\x80", "k"}).code(),
            absl::StatusCode::kInvalidArgument);  // surrogate
  EXPECT_THAT(ValidateScope({std::string("a\0b", 3), "k"}).message(),
              HasSubstr("control character 0x00 at byte 1"));
  EXPECT_EQ(ValidateScope({"a\nb", "k"}).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem
