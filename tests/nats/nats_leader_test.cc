// The store's writes reach each bucket's stream leader directly, whichever server its URI names:
// counted on the servers themselves (each node's /connz: the messages received from connections
// named "idem key store"), on the shared three-node cluster.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "idem/store.h"
#include "nats_test_support.h"
#include "store/nats/nats_record.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using natstest::Fixture;
using testing::MakeClaim;
using testing::MakeScope;

constexpr int kClaims = 40;
constexpr char kClientName[] = "idem key store";

class NatsLeaderConnection : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> urls = natstest::ServerUrls(Fixture::kCluster);
    ASSERT_TRUE(urls.ok()) << urls.status();
    nodes_ = natstest::SplitUrls(*urls);
    ASSERT_EQ(nodes_.size(), 3u);
    auto admin = natstest::Connect(*urls);
    ASSERT_TRUE(admin.ok()) << admin.status();
    admin_ = *std::move(admin);
  }

  // Opens a store on `servers` with `parameters`, claims one key (its first write finds the
  // leaders), then kClaims more (their scopes into `claimed`); returns the messages each node
  // received from idem's connections during those kClaims claims.
  std::vector<int64_t> ClaimThrough(const std::vector<std::string>& servers,
                                    const std::string& parameters,
                                    std::vector<Scope>* claimed = nullptr) {
    absl::StatusOr<std::unique_ptr<Store>> store = absl::UnknownError("not opened");
    EXPECT_TRUE(natstest::Eventually(
        [&] {
          store = OpenStore(natstest::StoreUriOn(servers, parameters));
          return store.ok();
        },
        60s))
        << store.status();
    if (!store.ok()) return {};
    const std::string prefix = natstest::FreshBucket("key");
    auto first = (*store)->Claim(MakeClaim(MakeScope(prefix + "-warm"), "w"));
    EXPECT_TRUE(first.ok() && first->claimed) << first.status();
    absl::StatusOr<natstest::ConnectionMessages> before =
        natstest::MessagesFrom(Fixture::kCluster, kClientName);
    EXPECT_TRUE(before.ok()) << before.status();
    for (int i = 0; i < kClaims; ++i) {
      const Scope scope = MakeScope(prefix + "-" + std::to_string(i));
      auto claim = (*store)->Claim(MakeClaim(scope, "w"));
      EXPECT_TRUE(claim.ok() && claim->claimed) << claim.status();
      if (claimed != nullptr) claimed->push_back(scope);
    }
    absl::StatusOr<natstest::ConnectionMessages> after =
        natstest::MessagesFrom(Fixture::kCluster, kClientName);
    EXPECT_TRUE(after.ok()) << after.status();
    if (!before.ok() || !after.ok()) return {};
    return natstest::Received(*before, *after);
  }

  // The node leading `stream` (polled until there is one).
  int LeaderOf(const std::string& stream) {
    int leader = 0;
    EXPECT_TRUE(natstest::Eventually(
        [&] { return (leader = natstest::StreamLeader(admin_->js(), stream)) > 0; }, 60s));
    return leader;
  }

  std::vector<std::string> nodes_;
  std::unique_ptr<natstest::JetStream> admin_;
};

// Before: the client published through the one server of its URI, a follower here, which
// forwarded every write to the leader (the leader's idem connections received none of them).
TEST_F(NatsLeaderConnection, AStoreGivenOnlyAFollowerWritesThroughTheLeader) {
  const std::string bucket = natstest::FreshBucket("leader");
  const std::string parameters = "replicas=3&bucket=" + bucket;
  auto made = OpenStore(natstest::StoreUriOn(nodes_, parameters));  // creates the bucket
  ASSERT_TRUE(made.ok()) << made.status();
  const int leader = LeaderOf("KV_" + bucket);
  ASSERT_GT(leader, 0);
  const int follower = leader % 3 + 1;
  const std::vector<int64_t> received =
      ClaimThrough({nodes_[static_cast<size_t>(follower - 1)]}, parameters);
  ASSERT_EQ(received.size(), 3u);
  ASSERT_EQ(natstest::StreamLeader(admin_->js(), "KV_" + bucket), leader) << "the leader moved";
  EXPECT_GE(received[static_cast<size_t>(leader - 1)], kClaims);
  // What the follower receives from idem: at most a request asking for the leader.
  EXPECT_LE(received[static_cast<size_t>(follower - 1)], 2);
}

// With shards, each bucket's writes go to its own leader: each node receives the claims of the
// buckets it leads (and at most a request per bucket asking for its leader).
TEST_F(NatsLeaderConnection, EachShardWritesThroughItsOwnLeader) {
  constexpr int kShards = 4;
  const std::string bucket = natstest::FreshBucket("shards");
  const std::string parameters = fmt::format("replicas=3&shards={}&bucket={}", kShards, bucket);
  auto made = OpenStore(natstest::StoreUriOn(nodes_, parameters));
  ASSERT_TRUE(made.ok()) << made.status();
  std::vector<int> leader_of;  // by shard
  for (int shard = 0; shard < kShards; ++shard) {
    leader_of.push_back(LeaderOf(fmt::format("KV_{}-{}", bucket, shard)));
    ASSERT_GT(leader_of.back(), 0);
  }
  std::vector<Scope> claimed;
  const std::vector<int64_t> received = ClaimThrough(nodes_, parameters, &claimed);
  ASSERT_EQ(received.size(), 3u);
  std::vector<int64_t> expected(3, 0);
  for (const Scope& scope : claimed) {
    ++expected[static_cast<size_t>(leader_of[nats::HashScope(scope, kShards).shard] - 1)];
  }
  for (int shard = 0; shard < kShards; ++shard) {
    ASSERT_EQ(natstest::StreamLeader(admin_->js(), fmt::format("KV_{}-{}", bucket, shard)),
              leader_of[shard])
        << "a leader moved";
  }
  for (size_t node = 0; node < 3; ++node) {
    EXPECT_GE(received[node], expected[node]) << "node " << node + 1;
    EXPECT_LE(received[node], expected[node] + kShards) << "node " << node + 1;
  }
}

}  // namespace
}  // namespace idem
