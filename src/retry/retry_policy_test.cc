#include "idem/retry/retry_policy.h"

#include <gtest/gtest.h>

namespace idem::retry {
namespace {

using Kind = AttemptResult::Kind;

RetryPolicy Policy(int attempts = 3, int64_t deadline = 0, int64_t timeout = 0) {
  return *RetryPolicy::Create({attempts, Millis(deadline), Millis(timeout), Millis(60'000)});
}

AttemptResult Status(int status) { return {Kind::kResponse, status, std::nullopt, false}; }
AttemptResult Failure(Kind kind) { return {kind, 0, std::nullopt, false}; }

constexpr RequestTraits kGet{"GET", false};
constexpr RequestTraits kPostKeyed{"POST", true};
constexpr RequestTraits kPostBare{"POST", false};

TEST(RetryPolicy, RetriesTransientStatusesOnly) {
  const RetryPolicy p = Policy();
  for (int s : {408, 425, 429, 500, 502, 503, 504, 599}) {
    EXPECT_TRUE(p.Decide(kGet, Status(s), 1, Millis(0), Millis(10)).retry()) << s;
  }
  for (int s : {400, 401, 404, 409, 422, 501, 505}) {
    EXPECT_EQ(p.Decide(kGet, Status(s), 1, Millis(0), Millis(10)).reason, StopReason::kFinalAnswer)
        << s;
  }
  for (int s : {200, 201, 204, 301, 304}) {
    EXPECT_EQ(p.Decide(kGet, Status(s), 1, Millis(0), Millis(10)).reason, StopReason::kSucceeded);
  }
}

TEST(RetryPolicy, RetriesConnectionFailuresTimeoutsAndBrokenAnswers) {
  const RetryPolicy p = Policy();
  for (Kind k : {Kind::kConnectFailed, Kind::kTimedOut, Kind::kBroken}) {
    const Decision d = p.Decide(kGet, Failure(k), 1, Millis(0), Millis(10));
    EXPECT_TRUE(d.retry());
    EXPECT_EQ(d.delay, Millis(10));
  }
}

// Issue 12: an unknown host and a too-large or malformed answer were retried as if transient.
TEST(RetryPolicy, NeverRetriesAPermanentFailure) {
  const RetryPolicy p = Policy();
  EXPECT_FALSE(IsTransientFailure(Failure(Kind::kPermanent)));
  for (const RequestTraits& request : {kGet, kPostKeyed}) {
    const Decision d = p.Decide(request, Failure(Kind::kPermanent), 1, Millis(0), Millis(10));
    EXPECT_EQ(d.reason, StopReason::kNotRetryable);
    EXPECT_FALSE(d.retry());
  }
}

TEST(RetryPolicy, NeverRetriesANonIdempotentMethodWithoutKey) {
  const RetryPolicy p = Policy();
  EXPECT_EQ(p.Decide(kPostBare, Status(503), 1, Millis(0), Millis(1)).reason, StopReason::kUnsafe);
  EXPECT_EQ(
      p.Decide({"PATCH", false}, Failure(Kind::kConnectFailed), 1, Millis(0), Millis(1)).reason,
      StopReason::kUnsafe);
  EXPECT_TRUE(p.Decide(kPostKeyed, Status(503), 1, Millis(0), Millis(1)).retry());
  EXPECT_TRUE(p.Decide({"PUT", false}, Status(503), 1, Millis(0), Millis(1)).retry());
  EXPECT_TRUE(p.Decide({"DELETE", false}, Status(503), 1, Millis(0), Millis(1)).retry());
}

TEST(RetryPolicy, StopsWhenServerSaysNever) {
  AttemptResult r = Status(503);
  r.do_not_retry = true;
  EXPECT_EQ(Policy().Decide(kGet, r, 1, Millis(0), Millis(1)).reason, StopReason::kDoNotRetry);
}

TEST(RetryPolicy, StopsAfterMaxAttempts) {
  const RetryPolicy p = Policy(3);
  EXPECT_TRUE(p.Decide(kGet, Status(503), 2, Millis(0), Millis(1)).retry());
  EXPECT_EQ(p.Decide(kGet, Status(503), 3, Millis(0), Millis(1)).reason,
            StopReason::kAttemptsExhausted);
}

TEST(RetryPolicy, RetryAfterLongerThanBackoffIsWaitedOut) {
  AttemptResult r = Status(429);
  r.retry_after = Millis(5000);
  EXPECT_EQ(Policy().Decide(kGet, r, 1, Millis(0), Millis(100)).delay, Millis(5000));
  r.retry_after = Millis(50);
  EXPECT_EQ(Policy().Decide(kGet, r, 1, Millis(0), Millis(100)).delay, Millis(100));
}

TEST(RetryPolicy, RetryAfterBeyondTheBoundStops) {
  AttemptResult r = Status(503);
  r.retry_after = Millis(60'001);
  EXPECT_EQ(Policy().Decide(kGet, r, 1, Millis(0), Millis(1)).reason,
            StopReason::kRetryAfterTooLong);
}

TEST(RetryPolicy, StopsWhenTheWaitWouldCrossTheDeadline) {
  const RetryPolicy p = Policy(10, 1000);
  EXPECT_TRUE(p.Decide(kGet, Status(503), 1, Millis(500), Millis(499)).retry());
  EXPECT_EQ(p.Decide(kGet, Status(503), 1, Millis(500), Millis(500)).reason, StopReason::kDeadline);
  EXPECT_EQ(p.Decide(kGet, Failure(Kind::kTimedOut), 1, Millis(1000), Millis(0)).reason,
            StopReason::kDeadline);
}

TEST(RetryPolicy, AttemptTimeoutShrinksToWhatTheDeadlineLeaves) {
  EXPECT_EQ(Policy(3, 0, 0).AttemptTimeout(Millis(0)), Millis(0));
  EXPECT_EQ(Policy(3, 0, 300).AttemptTimeout(Millis(5000)), Millis(300));
  EXPECT_EQ(Policy(3, 1000, 300).AttemptTimeout(Millis(100)), Millis(300));
  EXPECT_EQ(Policy(3, 1000, 300).AttemptTimeout(Millis(800)), Millis(200));
  EXPECT_EQ(Policy(3, 1000, 0).AttemptTimeout(Millis(900)), Millis(100));
}

TEST(RetryPolicy, RejectsZeroAttemptsAndNegativeDurations) {
  EXPECT_EQ(RetryPolicy::Create({0, Millis(0), Millis(0), Millis(0)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RetryPolicy::Create({1, Millis(-1), Millis(0), Millis(0)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(IsDoNotRetry, MatchesNeverInAnyCaseOnly) {
  EXPECT_TRUE(IsDoNotRetry("never"));
  EXPECT_TRUE(IsDoNotRetry(" Never "));
  EXPECT_FALSE(IsDoNotRetry("no"));
  EXPECT_FALSE(IsDoNotRetry(""));
}

}  // namespace
}  // namespace idem::retry
