#include "transfer.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace idem::ledger {
namespace {

using ::testing::HasSubstr;

std::string Message(std::string_view line) {
  auto transfer = ParseTransfer(line);
  EXPECT_EQ(transfer.status().code(), absl::StatusCode::kInvalidArgument) << line;
  return std::string(transfer.status().message());
}

TEST(ParseTransfer, ReadsAWellFormedLine) {
  auto transfer = ParseTransfer(R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})");
  ASSERT_TRUE(transfer.ok()) << transfer.status();
  EXPECT_EQ(*transfer, (Transfer{.key = "t-1", .from = "a", .to = "b", .amount = 5}));
}

TEST(ParseTransfer, FieldOrderDoesNotMatter) {
  auto transfer = ParseTransfer(R"({"amount":7,"to":"b","key":"k","from":"a"})");
  ASSERT_TRUE(transfer.ok()) << transfer.status();
  EXPECT_EQ(transfer->amount, 7);
}

TEST(ParseTransfer, FormatReadsBackAsTheSameTransfer) {
  const Transfer transfer{.key = "t-\"q\"", .from = "caf\xc3\xa9", .to = "b", .amount = 42};
  auto parsed = ParseTransfer(FormatTransfer(transfer));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, transfer);
}

TEST(ParseTransfer, RejectsInvalidJson) {
  EXPECT_THAT(Message(R"({"key": "t-1", "from": "a")"), HasSubstr("not valid JSON"));
}

TEST(ParseTransfer, RejectsAJsonValueThatIsNotAnObject) {
  EXPECT_THAT(Message(R"(["t-1", "a", "b", 5])"), HasSubstr("not a JSON object"));
}

TEST(ParseTransfer, RejectsAMissingFieldByName) {
  EXPECT_THAT(Message(R"({"key": "t-1", "from": "a", "amount": 5})"),
              HasSubstr("field 'to' is missing"));
  EXPECT_THAT(Message(R"({"key": "t-1", "from": "a", "to": "b"})"),
              HasSubstr("field 'amount' is missing"));
}

TEST(ParseTransfer, RejectsAnUnknownField) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "b", "amout": 5, "amount": 5})"),
              HasSubstr("unknown field 'amout'"));
}

TEST(ParseTransfer, RejectsAFractionalAmount) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "b", "amount": 5.5})"),
              HasSubstr("must be an integer"));
}

TEST(ParseTransfer, RejectsAnAmountWrittenAsAString) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "b", "amount": "5"})"),
              HasSubstr("must be an integer"));
}

TEST(ParseTransfer, RejectsZeroAndNegativeAmounts) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "b", "amount": 0})"),
              HasSubstr("'amount' is 0"));
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "b", "amount": -3})"),
              HasSubstr("'amount' is -3"));
}

TEST(ParseTransfer, RejectsAnAmountAboveTheMaximum) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "b", "amount": 1000000000001})"),
              HasSubstr("'amount' is 1000000000001"));
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "b", "amount": 18446744073709551615})"),
              HasSubstr("too large"));
}

TEST(ParseTransfer, AcceptsTheMaximumAmount) {
  auto transfer = ParseTransfer(R"({"key": "t", "from": "a", "to": "b", "amount": 1000000000000})");
  ASSERT_TRUE(transfer.ok()) << transfer.status();
  EXPECT_EQ(transfer->amount, kMaxAmount);
}

TEST(ParseTransfer, RejectsATransferToTheSameAccount) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "a", "to": "a", "amount": 1})"),
              HasSubstr("'from' and 'to' are both 'a'"));
}

TEST(ParseTransfer, RejectsAKeyThatIsNotVisibleAscii) {
  EXPECT_THAT(Message(R"({"key": "has space", "from": "a", "to": "b", "amount": 1})"),
              HasSubstr("field 'key' is not a valid idempotency key"));
  EXPECT_THAT(Message(R"({"key": "", "from": "a", "to": "b", "amount": 1})"),
              HasSubstr("field 'key'"));
  EXPECT_THAT(Message(fmt::format(R"({{"key": "{}", "from": "a", "to": "b", "amount": 1}})",
                                  std::string(256, 'k'))),
              HasSubstr("field 'key'"));
}

TEST(ParseTransfer, RejectsAnEmptyAccount) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "", "to": "b", "amount": 1})"),
              HasSubstr("field 'from' is empty"));
}

TEST(ParseTransfer, RejectsAnAccountWithAControlCharacter) {
  EXPECT_THAT(Message(R"({"key": "t", "from": "a\nb", "to": "b", "amount": 1})"),
              HasSubstr("control character"));
}

TEST(ParseTransfer, RejectsANonStringAccount) {
  EXPECT_THAT(Message(R"({"key": "t", "from": 1, "to": "b", "amount": 1})"),
              HasSubstr("field 'from' must be a JSON string"));
}

}  // namespace
}  // namespace idem::ledger
