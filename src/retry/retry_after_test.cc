#include "idem/retry/retry_after.h"

#include <gtest/gtest.h>

namespace idem::retry {
namespace {

// Sun, 06 Nov 1994 08:49:37 GMT, the example date of RFC 9110.
constexpr int64_t kExampleMillis = 784'111'777'000;

TEST(ParseHttpDate, ReadsAllThreeFormsOfRfc9110) {
  EXPECT_EQ(*ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), kExampleMillis);
  EXPECT_EQ(*ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT"), kExampleMillis);
  EXPECT_EQ(*ParseHttpDate("Sun Nov  6 08:49:37 1994"), kExampleMillis);
}

TEST(ParseHttpDate, RejectsOtherTextWithInvalidArgument) {
  for (const char* bad :
       {"", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 06 Foo 1994 08:49:37 GMT",
        "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT", "2024-01-01T00:00:00Z"}) {
    EXPECT_EQ(ParseHttpDate(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseRetryAfter, DeltaSecondsBecomeMilliseconds) {
  EXPECT_EQ(*ParseRetryAfter("120", 0), Millis(120'000));
  EXPECT_EQ(*ParseRetryAfter(" 0 ", 0), Millis(0));
}

TEST(ParseRetryAfter, DateIsReadRelativeToNow) {
  EXPECT_EQ(*ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kExampleMillis - 5000), Millis(5000));
}

TEST(ParseRetryAfter, DateInThePastMeansNoWait) {
  EXPECT_EQ(*ParseRetryAfter("Sun, 06 Nov 1994 08:49:37 GMT", kExampleMillis + 60'000), Millis(0));
}

TEST(ParseRetryAfter, RejectsNegativeFractionalAndJunk) {
  for (const char* bad : {"-5", "1.5", "soon", "", "5s"}) {
    EXPECT_EQ(ParseRetryAfter(bad, 0).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseRetryAfter, ExponentsAndNonNumbersAreRefused) {
  for (const char* bad : {"1e30", "1E3", "inf", "nan", "0x10"})
    EXPECT_EQ(ParseRetryAfter(bad, 0).status().code(), absl::StatusCode::kInvalidArgument) << bad;
}

TEST(ParseRetryAfter, FarFutureDateIsLargeNotOverflowed) {
  absl::StatusOr<Millis> d = ParseRetryAfter("Fri, 31 Dec 9999 23:59:59 GMT", 0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_GT(*d, Millis(int64_t{250'000'000'000'000}));
}

TEST(ParseRetryAfter, HugeDeltaIsLargeNotOverflowed) {
  absl::StatusOr<Millis> d = ParseRetryAfter("99999999999999999999999", 0);
  ASSERT_TRUE(d.ok());
  EXPECT_GT(*d, Millis(86'400'000));
}

}  // namespace
}  // namespace idem::retry
