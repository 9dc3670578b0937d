// `idem serve --store nats://...` end to end: the real idem binary in front of the real
// examples/charges upstream (tests/gateway's fixture), its keys on the three-node cluster's
// buckets (two shards). Two gateways on different ports share the keys and behave as one.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gateway_fixture.h"
#include "nats_test_support.h"

namespace idem::e2e {
namespace {

class NatsServeE2E : public GatewayFixture {
 protected:
  void SetUp() override {
    GatewayFixture::SetUp();
    absl::StatusOr<std::string> uri =
        natstest::StoreUri(natstest::Fixture::kCluster,
                           "replicas=3&shards=2&bucket=" + natstest::FreshBucket("serve"));
    ASSERT_TRUE(uri.ok()) << uri.status();
    store_ = *uri;
    StartGateway();
    second_port_ = FreePort();
    second_admin_port_ = FreePort();
    second_ = Spawn(second_port_, second_admin_port_, {}, Upstream(), dir_ + "/idem-2.log");
    ASSERT_TRUE(second_->Running()) << ReadFile(dir_ + "/idem-2.log");
  }
  void TearDown() override {
    second_.reset();
    GatewayFixture::TearDown();
  }

  Response PostTo(int port, const std::string& key, const std::string& body = kBody) {
    return Send(port, "POST", "/charges",
                {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, body);
  }

  int second_port_ = 0, second_admin_port_ = 0;
  std::unique_ptr<Child> second_;
};

TEST_F(NatsServeE2E, ARetryThroughTheOtherGatewayReplaysWithoutCallingUpstream) {
  const Response first = PostTo(port_, "order-1");
  ASSERT_EQ(first.status, 201) << first.body << first.error << Log();
  const Response retry = PostTo(second_port_, "order-1");
  EXPECT_EQ(retry.status, 201);
  EXPECT_EQ(retry.body, first.body);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  ExpectProblem(PostTo(second_port_, "order-1", R"({"amount":1})"), 422);
  EXPECT_EQ(Stat("calls"), 1);
}

TEST_F(NatsServeE2E, ConcurrentDuplicatesOnBothGatewaysChargeOnce) {
  constexpr int kThreads = 16;
  std::atomic<int> answered{0}, conflicts{0}, other{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      const Response r = PostTo(i % 2 == 0 ? port_ : second_port_, "order-hot");
      if (r.status == 201) {
        ++answered;
      } else if (r.status == 409) {
        ++conflicts;
      } else {
        ++other;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(other.load(), 0);
  EXPECT_GE(answered.load(), 1);
  EXPECT_EQ(answered + conflicts, kThreads);
  EXPECT_EQ(Stat("charges"), 1);
  EXPECT_EQ(PostTo(second_port_, "order-hot").Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(PostTo(port_, "order-hot").Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("charges"), 1);
}

TEST_F(NatsServeE2E, ManyKeysSpreadOverShardsAreEachChargedOnce) {
  for (int i = 0; i < 20; ++i) {
    const std::string key = "order-many-" + std::to_string(i);
    ASSERT_EQ(PostTo(i % 2 == 0 ? port_ : second_port_, key).status, 201) << Log();
    EXPECT_EQ(PostTo(i % 2 == 0 ? second_port_ : port_, key).Header("Idempotent-Replayed"), "true");
  }
  EXPECT_EQ(Stat("charges"), 20);
}

// On JetStream the bucket's max age (the retention) drops an expired record on the servers, so
// the gateway's sweeper finds nothing to delete (tests/gateway's SweeperE2E, which counts its
// deletions, runs on the SQL stores only): the record is gone all the same and the key runs again.
TEST_F(NatsServeE2E, AnExpiredKeyIsDroppedByTheBucketsMaxAgeAndRunsAgain) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kCluster, "replicas=3&bucket=" + natstest::FreshBucket("expiry"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  store_ = *uri;
  StartGateway({"--retention", "1s"});
  ASSERT_EQ(PostTo(port_, "order-e").status, 201) << Log();
  ASSERT_TRUE(Eventually([&] {
    const RunResult list = RunToExit(
        {IDEM_BINARY, "keys", "list", "--store", store_, "--include-expired", "--format", "json"},
        dir_);
    return list.exit_code == 0 && list.output.find("order-e") == std::string::npos;
  })) << "the record outlived the bucket's max age";
  const Response again = PostTo(port_, "order-e");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
}

}  // namespace
}  // namespace idem::e2e
