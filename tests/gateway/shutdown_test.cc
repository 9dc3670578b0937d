// End-to-end: SIGTERM never hands back a key whose request may have reached the upstream (a retry
// on another gateway would run it a second time while the first still runs): its lease is left
// to lapse. And a drain stops reading new requests on every connection at once, keep-alive
// connections opened before it included.
#include <signal.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gateway_fixture.h"
#include "scripted_upstream.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(ShutdownE2E) : public GatewayFixture {};
#define ShutdownE2E E2E_SUITE(ShutdownE2E)

// drain_timeout 1 s, an upstream call of 4 s: the gateway exits while the call runs. On the old
// code it released the key at exit, and the retry on the second gateway ran the request again
// at once.
TEST_F(ShutdownE2E, ACallStillRunningAtExitKeepsItsKeyHeldUntilItsLeaseLapses) {
  const std::vector<std::string> flags = {"--lease", "8s", "--upstream-timeout", "6s"};
  std::vector<std::string> with_drain = flags;
  with_drain.insert(with_drain.end(), {"--config", Config("drain_timeout = \"1s\"\n")});
  StartGateway(with_drain);
  const int port_b = FreePort();
  std::unique_ptr<Child> b = Spawn(port_b, FreePort(), flags, Upstream(), dir_ + "/idem-b.log");
  ASSERT_TRUE(b->Running()) << ReadFile(dir_ + "/idem-b.log");
  std::thread first([&] { Post("order-s", kBody, {{"X-Charges-Delay-Ms", "4000"}}); });
  ASSERT_TRUE(Eventually([&] { return Stat("calls") == 1; }));
  gateway_->Signal(SIGTERM);
  EXPECT_EQ(gateway_->Wait(std::chrono::seconds(10)), 0);
  const Headers json = {{"Idempotency-Key", "order-s"}, {"Content-Type", "application/json"}};
  int conflicts = 0;
  while (Stat("charges") == 0) {  // the first call still runs at the upstream
    const Response r = Send(port_b, "POST", "/charges", json, kBody);
    if (Stat("charges") > 0 && r.status != 409) break;  // it ended meanwhile
    ExpectProblem(r, 409);
    ++conflicts;
    ASSERT_EQ(Stat("calls"), 1) << "the request ran a second time while the first still ran";
  }
  first.join();
  EXPECT_GE(conflicts, 1);
  EXPECT_EQ(Stat("calls"), 1);
  // Once the lease has lapsed, a retry takes the key over and runs it with the same key.
  Response after;
  ASSERT_TRUE(Eventually(
      [&] {
        after = Send(port_b, "POST", "/charges", json, kBody);
        return after.status != 409;
      },
      std::chrono::seconds(20)));
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_NE(Log().find("left held until its lease lapses"), std::string::npos) << Log();
}

// A keep-alive connection opened before SIGTERM, idle while another request keeps the drain
// going: the request it sends after SIGTERM is never read (on the old code it was read, forwarded
// and answered 8 s into the drain).
TEST_F(ShutdownE2E, ADrainReadsNoNewRequestOnAConnectionOpenedBeforeIt) {
  StartGateway({"--config", Config("drain_timeout = \"10s\"\n")});
  KeepAliveClient client(port_);
  const Headers json = {{"Content-Type", "application/json"}};
  Headers first = json;
  first.push_back({"Idempotency-Key", "ka-1"});
  ASSERT_EQ(client.Send("POST", "/charges", first, kBody).status, 201);
  std::thread slow([&] { Post("slow", kBody, {{"X-Charges-Hold", "s"}}); });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  gateway_->Signal(SIGTERM);
  ASSERT_TRUE(Eventually([&] { return Send(admin_port_, "GET", "/readyz").status == 503; }));
  Headers second = json;
  second.push_back({"Idempotency-Key", "ka-2"});
  const Response late = client.Send("POST", "/charges", second, kBody);
  EXPECT_EQ(late.status, 0) << late.body;
  EXPECT_EQ(Stat("calls"), 2);  // ka-1 and slow: ka-2 never reached the upstream
  Send(charges_port_, "POST", "/release/s");
  slow.join();
  EXPECT_EQ(gateway_->Wait(std::chrono::seconds(15)), 0);
  EXPECT_EQ(Stat("calls"), 2);
}

}  // namespace
}  // namespace idem::e2e
