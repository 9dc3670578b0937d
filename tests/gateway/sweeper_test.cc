// End-to-end: the in-process sweeper deletes expired records (docs/gateway.md "Expired
// records"), observed through the admin metric idem_swept_keys_total and `idem keys list
// --include-expired`; an expired key runs again.
#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(SweeperE2E) : public GatewayFixture {};
#define SweeperE2E E2E_SUITE(SweeperE2E)

TEST_F(SweeperE2E, ExpiredRecordsAreDeletedInProcessAndTheKeyRunsAgain) {
  StartGateway({"--retention", "1s"});  // the sweeper runs every min(retention, 1m)
  ASSERT_EQ(Post("order-s1").status, 201);
  ASSERT_EQ(Post("order-s2", kBody, {{"X-Charges-Status", "402"}}).status, 402);
  ASSERT_TRUE(Eventually([&] { return Metric("idem_swept_keys_total") >= 2; }))
      << Send(admin_port_, "GET", "/metrics").body;
  const RunResult list = RunToExit(
      {IDEM_BINARY, "keys", "list", "--store", store_, "--include-expired", "--format", "json"},
      dir_);
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_EQ(list.output.find("order-s"), std::string::npos) << list.output;
  const Response again = Post("order-s1");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 3);
}

}  // namespace
}  // namespace idem::e2e
