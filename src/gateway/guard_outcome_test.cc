#include "gateway/guard_outcome.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

using DecisionKind = ClaimDecision::Kind;

KeyRecord Record(KeyState state, std::string fp, int64_t lease_until_ms = 0) {
  KeyRecord r;
  r.state = state;
  r.fingerprint = std::move(fp);
  r.lease_until_ms = lease_until_ms;
  return r;
}

TEST(DecideClaim, WinnerForwards) {
  EXPECT_EQ(DecideClaim(true, Record(KeyState::kInProgress, "f"), "f", 0).kind,
            DecisionKind::kForward);
}

TEST(DecideClaim, StoredOutcomeOfSameRequestReplays) {
  EXPECT_EQ(DecideClaim(false, Record(KeyState::kCompleted, "f"), "f", 0).kind,
            DecisionKind::kReplay);
  EXPECT_EQ(DecideClaim(false, Record(KeyState::kFailedFinal, "f"), "f", 0).kind,
            DecisionKind::kReplay);
}

TEST(DecideClaim, OtherRequestIsAMismatchInEveryState) {
  for (KeyState s : {KeyState::kInProgress, KeyState::kCompleted, KeyState::kFailedFinal})
    EXPECT_EQ(DecideClaim(false, Record(s, "other"), "f", 0).kind, DecisionKind::kMismatch);
}

TEST(DecideClaim, InFlightRetryAfterIsTheLeaseLeftRoundedUpAtLeastOne) {
  ClaimDecision d = DecideClaim(false, Record(KeyState::kInProgress, "f", 12'500), "f", 10'000);
  EXPECT_EQ(d.kind, DecisionKind::kInFlight);
  EXPECT_EQ(d.retry_after_seconds, 3);
  EXPECT_EQ(DecideClaim(false, Record(KeyState::kInProgress, "f", 9'000), "f", 10'000)
                .retry_after_seconds,
            1);
}

TEST(ReplayResponse, KeepsStatusBodyHeadersAndMarksReplayed) {
  StoredResponse stored{.status = 201,
                        .headers = {{"Content-Type", "application/json"}},
                        .body = std::string("{\"id\":1}\0x", 10)};
  StoredResponse out = ReplayResponse(stored);
  EXPECT_EQ(out.status, 201);
  EXPECT_EQ(out.body, stored.body);
  ASSERT_EQ(out.headers.size(), 2u);
  EXPECT_EQ(out.headers[1], (Header{"Idempotent-Replayed", "true"}));
}

TEST(ToStored, KeepsOnlyReplayableHeaders) {
  Route route;
  route.replay_headers = {"X-Charge-Id"};
  StoredResponse upstream{.status = 201,
                          .headers = {{"content-type", "application/json"},
                                      {"Set-Cookie", "s=1"},
                                      {"Location", "/charges/1"},
                                      {"x-charge-id", "ch_1"},
                                      {"Date", "today"}},
                          .body = "b"};
  StoredResponse stored = ToStored(upstream, route);
  EXPECT_EQ(stored.status, 201);
  EXPECT_EQ(stored.body, "b");
  EXPECT_EQ(stored.headers, (std::vector<Header>{{"content-type", "application/json"},
                                                 {"Location", "/charges/1"},
                                                 {"x-charge-id", "ch_1"}}));
}

TEST(InFlightResponse, Is409ProblemWithRetryAfter) {
  StoredResponse r = InFlightResponse(4);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.headers, (std::vector<Header>{{"Content-Type", "application/problem+json"},
                                            {"Retry-After", "4"}}));
  EXPECT_NE(r.body.find("\"status\":409"), std::string::npos);
}

TEST(MismatchResponse, Is422Problem) {
  StoredResponse r = MismatchResponse();
  EXPECT_EQ(r.status, 422);
  EXPECT_NE(r.body.find("key-reused"), std::string::npos);
}

}  // namespace
}  // namespace idem::gateway
