// End-to-end: two gateways on one store, one killed (SIGKILL) while its request is upstream. The
// other answers 409 while the dead one's lease lives; once it lapses, the next retry takes the key
// over, reaches the upstream with the same Idempotency-Key and completes; later retries replay.
#include <signal.h>

#include <thread>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(TakeoverE2E) : public GatewayFixture {};
#define TakeoverE2E E2E_SUITE(TakeoverE2E)

TEST_F(TakeoverE2E, TwoGatewaysOnOneStoreTheSurvivorTakesOverTheKilledOnesKey) {
  const std::vector<std::string> flags = {"--lease", "3s", "--upstream-timeout", "2s"};
  StartGateway(flags);
  const int port_b = FreePort();
  std::unique_ptr<Child> b = Spawn(port_b, FreePort(), flags, Upstream(), dir_ + "/idem-b.log");
  ASSERT_TRUE(b->Running()) << ReadFile(dir_ + "/idem-b.log");
  DeadLease dead{.claim_not_before = std::chrono::system_clock::now(),
                 .lease = std::chrono::seconds(3)};
  std::thread victim([&] { Post("order-t", kBody, {{"X-Charges-Hold", "t"}}); });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  dead.claim_not_after = std::chrono::system_clock::now();
  gateway_->Signal(SIGKILL);
  EXPECT_EQ(gateway_->Wait(std::chrono::seconds(10)), 128 + SIGKILL);
  victim.join();
  const Headers json = {{"Idempotency-Key", "order-t"}, {"Content-Type", "application/json"}};
  Response after = ExpectFirstRetryAfterDeath(port_b, "order-t", dead);
  ASSERT_TRUE(after.status != 409 || Eventually([&] {
                after = Send(port_b, "POST", "/charges", json, kBody);
                return after.status != 409;
              }));
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_EQ(after.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Send(port_b, "POST", "/charges", json, kBody).Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 2);
  const std::string stats = Stats();
  EXPECT_NE(stats.find(R"("keys":["order-t","order-t"])"), std::string::npos) << stats;
  Send(charges_port_, "POST", "/release/t");
}

}  // namespace
}  // namespace idem::e2e
