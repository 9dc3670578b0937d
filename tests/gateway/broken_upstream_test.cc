// End-to-end: an upstream that closes mid-response or answers bytes that are not HTTP. The client
// gets 502 application/problem+json, nothing is stored and the key is released: the retry runs.
#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(BrokenUpstreamE2E) : public GatewayFixture {};
#define BrokenUpstreamE2E E2E_SUITE(BrokenUpstreamE2E)

TEST_F(BrokenUpstreamE2E, UpstreamClosingMidResponseIs502NotStoredKeyReleased) {
  StartGateway();
  ExpectProblem(Post("order-c", kBody, {{"X-Charges-Break", "close"}}), 502);
  EXPECT_EQ(Metric("idem_keys_in_flight"), 0);
  const Response retry = Post("order-c");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
}

TEST_F(BrokenUpstreamE2E, UpstreamAnsweringGarbageIs502NotStoredKeyReleased) {
  StartGateway();
  const Response bad = Post("order-g", kBody, {{"X-Charges-Break", "garbage"}});
  ExpectProblem(bad, 502);
  EXPECT_NE(bad.body.find("upstream-bad-response"), std::string::npos) << bad.body;
  const Response retry = Post("order-g");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
  // Unguarded requests meet the same upstream: 502 too, and the gateway keeps serving.
  ExpectProblem(Send(port_, "POST", "/charges", {{"X-Charges-Break", "garbage"}}, kBody), 502);
  EXPECT_EQ(Post("order-g").Header("Idempotent-Replayed"), "true");
}

}  // namespace
}  // namespace idem::e2e
