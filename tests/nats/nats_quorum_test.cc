// Quorum loss on a private three-node cluster ("nats_quorum" fixture: these tests kill servers,
// which no test sharing a cluster may see): with two of three servers gone every write is
// Unavailable and nothing is stored for it; once they are back the store serves again and every
// outcome recorded before is still replayed.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "../common/port_claim.h"
#include "idem/store.h"
#include "nats_test_support.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using testing::CodeOf;
using testing::MakeClaim;
using testing::MakeScope;
using testing::SampleResponse;

TEST(NatsQuorum, WithTwoOfThreeServersDownWritesAreUnavailableAndNothingIsLost) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kCluster, "replicas=3&bucket=" + natstest::FreshBucket("quorum"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  StoreOptions options;
  options.lock_timeout = std::chrono::seconds(2);
  // Every server up (a test before may have failed with some of them down), then wait until
  // the cluster serves: it may still be recovering from the test before.
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "heal").ok());
  absl::StatusOr<std::unique_ptr<Store>> store = absl::UnknownError("not opened");
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        store = OpenStore(*uri, options);
        return store.ok();
      },
      std::chrono::seconds(60)))
      << store.status();
  const Scope done = MakeScope("done");
  auto claim = (*store)->Claim(MakeClaim(done));
  ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();
  ASSERT_TRUE((*store)->Complete(done, claim->record.fence, SampleResponse()).ok());

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "kill-node", 2).ok());
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "kill-node", 3).ok());
  const Scope during = MakeScope("during");
  auto lost = (*store)->Claim(MakeClaim(during, "worker-during"));
  EXPECT_EQ(CodeOf(lost), StatusCode::kUnavailable) << lost.status();
  // A second outcome for the finished key is refused either way: Aborted when the surviving
  // server still answers reads (a leader without quorum, until it steps down), else Unavailable.
  const absl::Status again = (*store)->Complete(done, claim->record.fence, SampleResponse(200));
  EXPECT_TRUE(absl::IsAborted(again) || absl::IsUnavailable(again)) << again;

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "start-node", 2).ok());
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "start-node", 3).ok());
  // Back once a quorum elects a leader again: a new key can be claimed.
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        auto fresh = (*store)->Claim(MakeClaim(MakeScope("after")));
        return fresh.ok() && fresh->claimed;
      },
      std::chrono::seconds(60)));
  auto kept = (*store)->Get(done);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(kept->state, KeyState::kCompleted);
  EXPECT_EQ(kept->response, SampleResponse());
  // The claim made without a quorum either never happened or is an in_progress claim of its
  // caller, whose outcome was reported unknown: never a finished record.
  auto after = (*store)->Get(during);
  if (after.ok()) {
    EXPECT_EQ(after->state, KeyState::kInProgress);
    EXPECT_EQ(after->owner, "worker-during");
  } else {
    EXPECT_EQ(CodeOf(after), StatusCode::kNotFound) << after.status();
  }
}

// The fixture keeps a killed server's ports claimed (scripts/test-ports.sh), so no e2e test or
// fixture is handed them while it is down, and "heal" starts it again on them: a test that fails
// with a server down leaves the next one a whole cluster.
TEST(NatsQuorumFixture, AKilledServersPortIsKeptAndHealStartsItAgain) {
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "heal").ok());
  absl::StatusOr<std::string> urls = natstest::ServerUrls(natstest::Fixture::kCluster);
  ASSERT_TRUE(urls.ok()) << urls.status();
  const std::vector<std::string> nodes = natstest::SplitUrls(*urls);
  ASSERT_EQ(nodes.size(), 3u);
  const int port = std::stoi(nodes[2].substr(nodes[2].rfind(':') + 1));
  EXPECT_TRUE(testing::PortClaimedElsewhere(port)) << nodes[2];

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "kill-node", 3).ok());
  EXPECT_FALSE(natstest::Connect(nodes[2]).ok()) << "node 3 still answers after its kill";
  EXPECT_TRUE(testing::PortClaimedElsewhere(port)) << "a killed server's port was let go";

  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "heal").ok());
  auto back = natstest::Connect(nodes[2]);
  EXPECT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(testing::PortClaimedElsewhere(port));
}

}  // namespace
}  // namespace idem
