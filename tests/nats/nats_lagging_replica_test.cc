// A bucket replica that lags behind its quorum, on the private "nats_quorum" cluster: a write
// counts once the leader and one follower have it, so the third replica may apply it later. A
// List (idem keys list, the completer's scan of lapsed claims) must still show every key written
// before it started, wherever JetStream places the consumer that reads the bucket.
#include <gtest/gtest.h>

#include <signal.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idem/store.h"
#include "nats_test_support.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using testing::MakeScope;

constexpr int kRounds = 10;
constexpr int kKeysPerRound = 200;

// Claims `count` new keys "r<round>-<i>" in batches of 50; returns false if one is not claimed.
bool ClaimKeys(Store& store, int round, int count) {
  for (int start = 0; start < count; start += 50) {
    std::vector<LeaseWrite> writes;
    for (int i = start; i < start + 50 && i < count; ++i) {
      writes.push_back({.kind = LeaseWrite::Kind::kClaim,
                        .scope = MakeScope("r" + std::to_string(round) + "-" + std::to_string(i)),
                        .fingerprint = testing::kFingerprint,
                        .owner = "lagging-test",
                        .lease = 60s});
    }
    auto results = store.ApplyLeaseBatch(writes);
    if (!results.ok()) return false;
    for (const LeaseWriteResult& r : *results) {
      if (!r.status.ok() || !r.claimed) return false;
    }
  }
  return true;
}

TEST(NatsLaggingReplica, ListShowsEveryKeyWrittenBeforeItWhileAReplicaCatchesUp) {
  absl::StatusOr<std::string> urls = natstest::ServerUrls(natstest::Fixture::kCluster);
  ASSERT_TRUE(urls.ok()) << urls.status();
  const std::vector<std::string> nodes = natstest::SplitUrls(*urls);
  ASSERT_EQ(nodes.size(), 3u);
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "heal").ok());
  const std::string bucket = natstest::FreshBucket("lagging");
  StoreOptions options;
  options.lock_timeout = 5s;
  absl::StatusOr<std::unique_ptr<Store>> store = absl::UnknownError("not opened");
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        store = OpenStore(natstest::StoreUriOn(nodes, "replicas=3&bucket=" + bucket), options);
        return store.ok();
      },
      60s))
      << store.status();
  auto admin = natstest::Connect(*urls);
  ASSERT_TRUE(admin.ok()) << admin.status();
  size_t written = 0;
  for (int round = 0; round < kRounds; ++round) {
    int leader = 0;
    ASSERT_TRUE(natstest::Eventually(
        [&] { return (leader = natstest::StreamLeader((*admin)->js(), "KV_" + bucket)) > 0; },
        60s));
    // Each follower in turn (nodes are 1..3).
    const int lagging = round % 2 == 0 ? leader % 3 + 1 : (leader + 1) % 3 + 1;
    std::vector<std::string> up;  // the store talks to the other two only
    for (int node = 1; node <= 3; ++node) {
      if (node != lagging) up.push_back(nodes[node - 1]);
    }
    auto writer = OpenStore(natstest::StoreUriOn(up, "replicas=3&bucket=" + bucket), options);
    ASSERT_TRUE(writer.ok()) << writer.status();
    // The lagging replica misses the round's writes (the leader and the other follower are a
    // quorum), and catches up while the list runs, starved of CPU (stopped but for 1 ms in 10).
    absl::StatusOr<int> pid = natstest::NodePid(natstest::Fixture::kCluster, lagging);
    ASSERT_TRUE(pid.ok()) << pid.status();
    ASSERT_EQ(kill(*pid, SIGSTOP), 0);
    const bool claimed = ClaimKeys(**writer, round, kKeysPerRound);
    std::atomic<bool> listing{true};
    std::thread starve([&] {
      while (listing) {
        kill(*pid, SIGCONT);
        std::this_thread::sleep_for(1ms);
        kill(*pid, SIGSTOP);
        std::this_thread::sleep_for(9ms);
      }
      kill(*pid, SIGCONT);
    });
    absl::StatusOr<std::vector<KeyRecord>> listed = (*writer)->List({.limit = 10000});
    listing = false;
    starve.join();
    ASSERT_TRUE(claimed) << "round " << round << ": a claim failed with node " << lagging
                         << " paused";
    written += kKeysPerRound;
    ASSERT_TRUE(listed.ok()) << listed.status();
    EXPECT_EQ(listed->size(), written) << "round " << round << ", node " << lagging
                                       << " lagging: the list missed keys written before it";
  }
}

}  // namespace
}  // namespace idem
