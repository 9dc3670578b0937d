// The table of what an upstream's answer lets a key's holder record: one rule for a client's
// forward and the completer's re-send (VerdictOnAnswer), one for a status URL's answer
// (VerdictOnStatusAnswer).
#include "gateway/answer_verdict.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

using VerdictKind = AnswerVerdict::Kind;

UpstreamAnswer Answered(int status, std::string body = "{}") {
  StoredResponse r{.status = status, .body = std::move(body)};
  r.headers = {{"Content-Type", "application/json"}, {"X-Secret", "s"}};
  return {.response = std::move(r)};
}

UpstreamAnswer Failed(absl::Status status, bool head_received, int head_status = 0) {
  return {
      .response = std::move(status), .head_received = head_received, .head_status = head_status};
}

TEST(VerdictOnAnswer, AFinalStatusIsRecordedTrimmedToWhatIsReplayed) {
  const Route route;
  AnswerVerdict v = VerdictOnAnswer(route, Answered(201, "ch_1"));
  EXPECT_EQ(v.kind, VerdictKind::kCompleted);
  EXPECT_EQ(v.stored.status, 201);
  EXPECT_EQ(v.stored.body, "ch_1");
  ASSERT_EQ(v.stored.headers.size(), 1u);
  EXPECT_EQ(v.stored.headers[0].name, "Content-Type");
  EXPECT_EQ(VerdictOnAnswer(route, Answered(400)).kind, VerdictKind::kFailedFinal);
  EXPECT_EQ(VerdictOnAnswer(route, Answered(400)).stored.status, 400);
}

TEST(VerdictOnAnswer, ATransientStatusRecordsNothingAndSaysWhich) {
  const Route route;
  AnswerVerdict v = VerdictOnAnswer(route, Answered(503));
  EXPECT_EQ(v.kind, VerdictKind::kTransient);
  EXPECT_NE(v.why.find("503"), std::string::npos) << v.why;
  Route final503;
  final503.final_statuses = {503};
  EXPECT_EQ(VerdictOnAnswer(final503, Answered(503)).kind, VerdictKind::kFailedFinal);
}

TEST(VerdictOnAnswer, NoAnswerHeadIsNotReached) {
  AnswerVerdict v = VerdictOnAnswer(Route{}, Failed(absl::UnavailableError("refused"), false));
  EXPECT_EQ(v.kind, VerdictKind::kNotReached);
  EXPECT_NE(v.why.find("refused"), std::string::npos) << v.why;
}

// The rule the completer's re-send once ignored: a head that arrived means the request ran.
TEST(VerdictOnAnswer, AnAnswerWhoseHeadArrivedButCannotBeKeptIsThe502NotKeptNeverARetry) {
  for (absl::Status status :
       {absl::DataLossError("the answer is larger than 16777216 bytes"),
        absl::UnavailableError("cut off"), absl::DeadlineExceededError("too slow")}) {
    AnswerVerdict v = VerdictOnAnswer(Route{}, Failed(status, true));
    EXPECT_EQ(v.kind, VerdictKind::kNotKept) << status;
    EXPECT_EQ(v.stored.status, 502);
    EXPECT_NE(v.stored.body.find("upstream-answer-not-kept"), std::string::npos) << v.stored.body;
    EXPECT_NE(v.stored.body.find(std::string(status.message())), std::string::npos);
  }
}

TEST(VerdictOnStatusAnswer, TwoHundredIsRecordedUnderRecoveredStatus404NeverHappened) {
  Route route;
  route.recover = RecoverMode::kStatus;
  EXPECT_EQ(VerdictOnStatusAnswer(route, Answered(200)).kind, VerdictKind::kCompleted);
  EXPECT_EQ(VerdictOnStatusAnswer(route, Answered(200)).stored.status, 200);
  route.recovered_status = 201;
  AnswerVerdict v = VerdictOnStatusAnswer(route, Answered(200, "ch_1"));
  EXPECT_EQ(v.kind, VerdictKind::kCompleted);
  EXPECT_EQ(v.stored.status, 201);
  EXPECT_EQ(v.stored.body, "ch_1");
  EXPECT_EQ(VerdictOnStatusAnswer(route, Answered(404)).kind, VerdictKind::kNeverHappened);
}

TEST(VerdictOnStatusAnswer, AnyOtherStatusOrNoneIsAskedAgain) {
  const Route route;
  for (int status : {201, 204, 400, 409, 500, 503})
    EXPECT_EQ(VerdictOnStatusAnswer(route, Answered(status)).kind, VerdictKind::kTransient)
        << status;
  EXPECT_EQ(VerdictOnStatusAnswer(route, Failed(absl::UnavailableError("x"), false)).kind,
            VerdictKind::kNotReached);
  // A question has no effect: an answer that cannot be kept, whose head did not say the effect
  // happened, is asked again, not recorded.
  EXPECT_EQ(VerdictOnStatusAnswer(route, Failed(absl::DataLossError("big"), true)).kind,
            VerdictKind::kNotReached);
  EXPECT_EQ(VerdictOnStatusAnswer(route, Failed(absl::DataLossError("big"), true, 503)).kind,
            VerdictKind::kNotReached);
  EXPECT_EQ(VerdictOnStatusAnswer(route, Failed(absl::DataLossError("big"), true, 404)).kind,
            VerdictKind::kNotReached);
}

// The storm's sq-11-k118 and na-57255-k62: the status URL's 200 is as large as the request's own
// answer was, so asking again gets it again for ever. It is recorded as the request's own answer
// would be: exactly what VerdictOnAnswer records for it, the 502 upstream-answer-not-kept.
TEST(VerdictOnStatusAnswer, ATwoHundredTooLargeToKeepIsWhatTheRequestsOwnAnswerWouldRecord) {
  Route route;
  route.recover = RecoverMode::kStatus;
  route.recovered_status = 201;
  const UpstreamAnswer big = Failed(absl::DataLossError("a body larger than the limit"), true, 200);
  const AnswerVerdict status = VerdictOnStatusAnswer(route, big);
  const AnswerVerdict own = VerdictOnAnswer(route, big);
  EXPECT_EQ(status.kind, VerdictKind::kNotKept);
  EXPECT_EQ(status.stored.status, 502);
  EXPECT_EQ(status.stored.status, own.stored.status);
  EXPECT_EQ(status.stored.body, own.stored.body);
  EXPECT_NE(status.stored.body.find("upstream-answer-not-kept"), std::string::npos)
      << status.stored.body;
}

}  // namespace
}  // namespace idem::gateway
