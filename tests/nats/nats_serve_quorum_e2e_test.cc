// `idem serve --store nats://...` when its bucket loses the quorum, on the private "nats_quorum"
// cluster (its servers are killed here): a request that cannot be claimed is 503
// application/problem+json and never reaches the upstream; once the servers are back the same key
// runs, its effect exactly once, and what was stored before the outage is still replayed.
#include <memory>
#include <string>

#include "gateway_fixture.h"
#include "idem/store.h"
#include "nats_test_support.h"

namespace idem::e2e {
namespace {

class NatsServeQuorumE2E : public GatewayFixture {};

TEST_F(NatsServeQuorumE2E, QuorumLostIs503NeverForwardedAndTheKeyRunsOnceItIsBack) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kCluster, "replicas=3&bucket=" + natstest::FreshBucket("serve_quorum"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  store_ = *uri;
  // Every server up (a test before may have failed with some of them down), then wait until
  // the cluster serves: it may still be recovering from the test before.
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "heal").ok());
  ASSERT_TRUE(
      natstest::Eventually([&] { return OpenStore(store_).ok(); }, std::chrono::seconds(60)));
  // A claim whose outcome the outage made unknown holds its key for the lease: 3 s here.
  StartGateway({"--lease", "3s", "--upstream-timeout", "2s"});
  const Response first = Post("order-before");
  ASSERT_EQ(first.status, 201) << first.body << first.error << Log();

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "kill-node", 2).ok());
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "kill-node", 3).ok());
  const Response during = Post("order-during");
  ExpectProblem(during, 503);
  EXPECT_EQ(Stat("calls"), 1) << "a request went upstream without its claim";

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "start-node", 2).ok());
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "start-node", 3).ok());
  // Back once a quorum elects a leader and any claim left by the outage has lapsed (503 or 409
  // until then).
  Response again;
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        again = Post("order-during");
        return again.status != 503 && again.status != 409;
      },
      std::chrono::seconds(60)))
      << again.status << " " << again.body;
  EXPECT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(again.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
  const Response replay = Post("order-before");
  EXPECT_EQ(replay.status, 201);
  EXPECT_EQ(replay.body, first.body);
  EXPECT_EQ(replay.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 2);
}

}  // namespace
}  // namespace idem::e2e
