// Per key, fences strictly grow on JetStream across two store handles (two gateways on one
// bucket), whatever either drew for keys it found held, across takeovers, releases and a change of
// the bucket's stream leader: the sequence in which a stale holder's Complete was taken over a live
// claim. A fence used to be drawn from a per-process counter that each draw advanced, landed or
// not; a delete marker kept no fence; so the other handle's later claims of the key climbed again
// from the bucket's revisions and one got the stale holder's fence. On the three-node cluster.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "idem/clock.h"
#include "idem/store.h"
#include "nats_test_support.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using absl::StatusCode;
using natstest::Fixture;
using testing::CodeOf;
using testing::MakeClaim;
using testing::MakeScope;
using testing::SampleResponse;

constexpr Millis kStallLease = 100ms;

TEST(NatsFenceGrowth, AStaleHoldersCompleteNeverLandsOnALaterClaimAcrossHandlesAndALeaderChange) {
  const std::string bucket = natstest::FreshBucket("growth");
  absl::StatusOr<std::string> uri =
      natstest::StoreUri(Fixture::kCluster, "replicas=3&bucket=" + bucket);
  ASSERT_TRUE(uri.ok()) << uri.status();
  ManualClock clock;
  StoreOptions options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<Store>> opened_a = OpenStore(*uri, options);
  ASSERT_TRUE(opened_a.ok()) << opened_a.status();
  absl::StatusOr<std::unique_ptr<Store>> opened_b = OpenStore(*uri, options);
  ASSERT_TRUE(opened_b.ok()) << opened_b.status();
  Store& a = **opened_a;  // gateway A
  Store& b = **opened_b;  // gateway B
  const Scope x = MakeScope("x");
  const Scope k = MakeScope("k");

  // B claims and completes X; A sees 30 duplicates of X (each a Create that finds X held).
  absl::StatusOr<ClaimResult> bx = b.Claim(MakeClaim(x, "B"));
  ASSERT_TRUE(bx.ok() && bx->claimed) << bx.status();
  ASSERT_TRUE(b.Complete(x, bx->record.fence, SampleResponse()).ok());
  for (int i = 0; i < 30; ++i) {
    absl::StatusOr<ClaimResult> dup = a.Claim(MakeClaim(x, "A"));
    ASSERT_TRUE(dup.ok() && !dup->claimed) << dup.status();
  }
  // A claims K with a 100 ms lease and stalls; B takes K over and releases it.
  absl::StatusOr<ClaimResult> stalled = a.Claim(MakeClaim(k, "A", testing::kFingerprint,
                                                          kStallLease));
  ASSERT_TRUE(stalled.ok() && stalled->claimed) << stalled.status();
  const int64_t stale = stalled->record.fence;
  clock.Advance(kStallLease);
  absl::StatusOr<KeyRecord> taken = b.TakeOver(MakeClaim(k, "B"), stale);
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_GT(taken->fence, stale);
  ASSERT_TRUE(b.Release(k, taken->fence).ok());
  // The bucket's stream leader steps down: another server leads it from here on.
  ASSERT_TRUE(natstest::ChangeBucketLeader(Fixture::kCluster, bucket).ok());

  // B's later claims of K, each released again: every fence above every earlier one, and A's
  // stale Complete refused while each is held.
  int64_t last = taken->fence;
  for (int i = 0; i < 30; ++i) {
    absl::StatusOr<ClaimResult> claim = b.Claim(MakeClaim(k, "B"));
    ASSERT_TRUE(claim.ok() && claim->claimed) << "claim " << i << ": " << claim.status();
    EXPECT_GT(claim->record.fence, last) << "claim " << i;
    last = claim->record.fence;
    EXPECT_EQ(CodeOf(a.Complete(k, stale, SampleResponse(200))), StatusCode::kAborted)
        << "claim " << i << " holds fence " << claim->record.fence;
    absl::StatusOr<KeyRecord> record = b.Get(k);
    ASSERT_TRUE(record.ok()) << record.status();
    ASSERT_EQ(record->state, KeyState::kInProgress) << "claim " << i;
    ASSERT_EQ(record->fence, claim->record.fence);
    if (i + 1 < 30) {
      ASSERT_TRUE(b.Release(k, claim->record.fence).ok()) << "claim " << i;
    }
  }
  // A wakes up: its Complete is refused, and B's request still holds K.
  EXPECT_EQ(CodeOf(a.Complete(k, stale, SampleResponse(200))), StatusCode::kAborted);
  absl::StatusOr<KeyRecord> record = a.Get(k);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kInProgress);
  EXPECT_EQ(record->owner, "B");
  EXPECT_EQ(record->fence, last);
}

}  // namespace
}  // namespace idem
