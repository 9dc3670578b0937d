#include "check/body_variant.h"

#include <gtest/gtest.h>

namespace idem::check {
namespace {

TEST(OtherBody, AddsOneToAJsonObjectsFirstNumber) {
  const BodyVariant v = OtherBody(R"({"amount":4200,"currency":"eur"})");
  EXPECT_EQ(v.body, R"({"amount":4201,"currency":"eur"})");
  EXPECT_EQ(v.change, R"(field "amount" changed (4200 -> 4201))");
}

TEST(OtherBody, ChangesAFirstStringBooleanOrNull) {
  EXPECT_EQ(OtherBody(R"({"sku":"a1","n":1})").body, R"({"sku":"a1-other","n":1})");
  EXPECT_EQ(OtherBody(R"({"paid":true})").body, R"({"paid":false})");
  EXPECT_EQ(OtherBody(R"({"note":null})").body, R"({"note":"idem-check"})");
  EXPECT_EQ(OtherBody(R"({"items":[1,2]})").body, R"({"items":"idem-check"})");
}

TEST(OtherBody, ChangesNumbersWhereAddingOneWouldNot) {
  EXPECT_EQ(OtherBody(R"({"x":1E300})").body, R"({"x":-1E300})");
  EXPECT_EQ(OtherBody(R"({"x":9223372036854775807})").body, R"({"x":9223372036854775806})");
  EXPECT_EQ(OtherBody(R"({"x":18446744073709551615})").body, R"({"x":18446744073709551614})");
}

TEST(OtherBody, AddsAMemberToAnEmptyObject) {
  const BodyVariant v = OtherBody("{}");
  EXPECT_EQ(v.body, R"({"idem_check":1})");
  EXPECT_EQ(v.change, R"(field "idem_check" added)");
}

TEST(OtherBody, AppendsAByteToAnythingElse) {
  for (const char* body : {"", "amount=42", "[1,2]", "42", "{\"unclosed\":"}) {
    const BodyVariant v = OtherBody(body);
    EXPECT_EQ(v.body, std::string(body) + "x") << body;
    EXPECT_EQ(v.change, "one byte appended");
  }
}

}  // namespace
}  // namespace idem::check
