// A bucket's Raft leader paused (SIGSTOP) for longer than an election, on the private "nats_quorum"
// cluster: the other two servers elect a new leader, a second worker takes the lapsed key over and
// completes it; when the old leader wakes up (SIGCONT), the first worker, talking only to that
// server, must not record its outcome over the new owner's: Aborted or Unavailable, never OK.
#include <gtest/gtest.h>
#include <nats/nats.h>

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

using absl::StatusCode;
using namespace std::chrono_literals;
using testing::MakeClaim;
using testing::MakeScope;
using testing::SampleResponse;

// The name of the stream's leader ("idem-nI"), or "" while there is none.
std::string Leader(jsCtx* js, const std::string& stream) {
  jsStreamInfo* info = nullptr;
  std::string leader;
  if (js_GetStreamInfo(&info, js, stream.c_str(), nullptr, nullptr) == NATS_OK &&
      info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
    leader = info->Cluster->Leader;
  }
  jsStreamInfo_Destroy(info);
  return leader;
}

TEST(NatsPausedLeader, AWokenLeaderNeverRecordsTheOutcomeOfAKeyItsWorkerLost) {
  absl::StatusOr<std::string> urls = natstest::ServerUrls(natstest::Fixture::kCluster);
  ASSERT_TRUE(urls.ok()) << urls.status();
  const std::vector<std::string> nodes = natstest::SplitUrls(*urls);
  ASSERT_EQ(nodes.size(), 3u);
  const std::string bucket = natstest::FreshBucket("paused");
  ManualClock clock;
  StoreOptions options;
  options.clock = &clock;
  options.lock_timeout = 3s;
  // Every server up (a test before may have failed with some of them down), then wait until
  // the cluster serves: it may still be recovering from the test before.
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "heal").ok());
  absl::StatusOr<std::unique_ptr<Store>> setup = absl::UnknownError("not opened");
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        setup = OpenStore(natstest::StoreUriOn(nodes, "replicas=3&bucket=" + bucket), options);
        return setup.ok();
      },
      60s))
      << setup.status();
  auto admin = natstest::Connect(*urls);
  ASSERT_TRUE(admin.ok()) << admin.status();
  std::string leader;
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        leader = Leader((*admin)->js(), "KV_" + bucket);
        return leader.rfind("idem-n", 0) == 0;
      },
      60s))
      << leader;
  const int leader_node = std::stoi(leader.substr(6));
  std::vector<std::string> others;
  for (int i = 1; i <= 3; ++i) {
    if (i != leader_node) others.push_back(nodes[i - 1]);
  }
  auto first =
      OpenStore(natstest::StoreUriOn({nodes[leader_node - 1]}, "replicas=3&bucket=" + bucket),
                options);  // the leader only
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = OpenStore(natstest::StoreUriOn(others, "replicas=3&bucket=" + bucket), options);
  ASSERT_TRUE(second.ok()) << second.status();
  auto others_admin = natstest::Connect(others[0] + "," + others[1]);
  ASSERT_TRUE(others_admin.ok()) << others_admin.status();

  const Scope scope = MakeScope("paused-key");
  auto claim = (*first)->Claim(MakeClaim(scope, "worker-A", testing::kFingerprint, 1s));
  ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "pause-node", leader_node).ok());
  // The other two elect a new leader (polled, with a bound).
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  std::string new_leader;
  while (std::chrono::steady_clock::now() < deadline) {
    new_leader = Leader((*others_admin)->js(), "KV_" + bucket);
    if (!new_leader.empty() && new_leader != leader) break;
    std::this_thread::sleep_for(100ms);
  }
  ASSERT_FALSE(new_leader.empty() || new_leader == leader) << "no new leader was elected";
  clock.Advance(2s);  // worker-A's lease has lapsed
  auto taken = (*second)->TakeOver(MakeClaim(scope, "worker-B"), claim->record.fence);
  ASSERT_TRUE(taken.ok()) << taken.status();
  ASSERT_TRUE((*second)->Complete(scope, taken->fence, SampleResponse(201)).ok());

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "resume-node", leader_node).ok());
  const absl::Status late = (*first)->Complete(scope, claim->record.fence, SampleResponse(500));
  EXPECT_TRUE(absl::IsAborted(late) || absl::IsUnavailable(late)) << late;
  // The woken server rejoins: reads may be Unavailable for a moment.
  absl::StatusOr<KeyRecord> record = absl::UnknownError("not read");
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        record = (*second)->Get(scope);
        return record.ok();
      },
      60s))
      << record.status();
  EXPECT_EQ(record->owner, "worker-B");
  EXPECT_EQ(record->response, SampleResponse(201));
  // Once the old leader has caught up, reading through it shows the same record.
  auto through_old = (*first)->Get(scope);
  if (through_old.ok()) {
    EXPECT_EQ(through_old->owner, "worker-B");
  }
}

}  // namespace
}  // namespace idem
