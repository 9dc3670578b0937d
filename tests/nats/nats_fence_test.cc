// Fences on JetStream are written into the record by the claim or takeover that draws them, never
// read off the revision an entry happens to sit at: a three-node bucket that loses a quorum's
// unflushed writes can apply a claim's message again at a later revision (seen in the fault
// storm: the holder's fence "moved" to a record of its own claim, and its outcome was dropped).
// On the single-node fixture, the message applied again is simulated by writing its bytes anew.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "idem/store.h"
#include "nats_test_support.h"
#include "store/nats/nats_client.h"
#include "store/nats/nats_keyspace.h"
#include "store/nats/nats_record.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using testing::MakeClaim;
using testing::MakeScope;
using testing::SampleResponse;

class NatsFence : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> urls = natstest::ServerUrls(natstest::Fixture::kSingle);
    ASSERT_TRUE(urls.ok()) << urls.status();
    uri_.servers = {*urls};
    uri_.bucket = natstest::FreshBucket("fence");
    uri_.replicas = 1;
    store_uri_ = fmt::format("nats://{}?replicas=1&bucket={}", urls->substr(7), uri_.bucket);
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(store_uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto client = nats::JetStreamClient::Connect(uri_, 2s);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }

  // Writes the scope's last entry again, byte for byte, as a message applied twice would be.
  void ApplyAgain(const Scope& scope) {
    nats::Keyspace keyspace(*client_, uri_);
    const nats::Slot slot = keyspace.Locate(scope);
    absl::StatusOr<nats::Entry> entry = client_->Read(slot.bucket, slot.key);
    ASSERT_TRUE(entry.ok() && entry->present) << entry.status();
    auto written = client_->Write(slot.bucket, slot.key, entry->value, entry->revision);
    ASSERT_TRUE(written.ok() && written->has_value()) << written.status();
    ASSERT_GT(**written, entry->revision);
  }

  nats::NatsUri uri_;
  std::string store_uri_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<nats::JetStreamClient> client_;
};

TEST_F(NatsFence, AClaimAppliedAgainAtALaterRevisionKeepsItsHoldersFence) {
  const Scope scope = MakeScope("k1");
  absl::StatusOr<ClaimResult> claim = store_->Claim(MakeClaim(scope, "holder/1"));
  ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();
  ApplyAgain(scope);
  absl::StatusOr<KeyRecord> got = store_->Get(scope);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->fence, claim->record.fence);
  EXPECT_TRUE(store_->Heartbeat(scope, claim->record.fence, 30s).ok());
  EXPECT_TRUE(store_->Complete(scope, claim->record.fence, SampleResponse(201)).ok());
}

TEST_F(NatsFence, ABatchedClaimAppliedAgainKeepsItsHoldersFence) {
  const Scope scope = MakeScope("k1");
  std::vector<LeaseWrite> writes{{.kind = LeaseWrite::Kind::kClaim,
                                  .scope = scope,
                                  .fingerprint = testing::kFingerprint,
                                  .owner = "holder/1",
                                  .lease = 30s}};
  absl::StatusOr<std::vector<LeaseWriteResult>> batch = store_->ApplyLeaseBatch(writes);
  ASSERT_TRUE(batch.ok()) << batch.status();
  std::vector<LeaseWriteResult>& results = *batch;
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].status.ok() && results[0].claimed) << results[0].status;
  ApplyAgain(scope);
  absl::StatusOr<KeyRecord> got = store_->Get(scope);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->fence, results[0].record.fence);
  EXPECT_TRUE(store_->Complete(scope, results[0].record.fence, SampleResponse(201)).ok());
}

TEST_F(NatsFence, ATakeoverAppliedAgainKeepsItsHoldersFence) {
  const Scope scope = MakeScope("k1");
  absl::StatusOr<ClaimResult> first =
      store_->Claim(MakeClaim(scope, "first/1", testing::kFingerprint, 1ms));
  ASSERT_TRUE(first.ok() && first->claimed) << first.status();
  absl::StatusOr<KeyRecord> taken;
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        taken = store_->TakeOver(MakeClaim(scope, "second/1"), first->record.fence);
        return taken.ok();
      },
      10s))
      << taken.status();
  ApplyAgain(scope);
  EXPECT_TRUE(store_->Complete(scope, taken->fence, SampleResponse(201)).ok());
  EXPECT_FALSE(store_->Complete(scope, first->record.fence, SampleResponse(200)).ok());
}

// A release leaves a delete marker that keeps the fence of the record it removed: the key's next
// claim draws above it even when that fence is far above the bucket's revisions (as the fences of
// an older idem, which each refused or unanswered write pushed ahead, could be). The marker used
// to keep nothing, and the next claim drew from the revisions alone: the released fence again.
TEST_F(NatsFence, TheNextClaimAfterAReleaseDrawsAboveTheFenceTheMarkerKept) {
  const Scope scope = MakeScope("k1");
  KeyRecord ahead;
  ahead.scope = scope;
  ahead.fingerprint = testing::kFingerprint;
  ahead.state = KeyState::kInProgress;
  ahead.owner = "old/1";
  ahead.fence = 1000;
  ahead.created_ms = ahead.updated_ms = SystemClock().NowMillis();
  ahead.lease_until_ms = ahead.created_ms + 30'000;
  ahead.expires_ms = ahead.created_ms + 3'600'000;
  nats::Keyspace keyspace(*client_, uri_);
  const nats::Slot slot = keyspace.Locate(scope);
  auto written = client_->Write(slot.bucket, slot.key, nats::EncodeRecord(ahead), 0);
  ASSERT_TRUE(written.ok() && written->has_value()) << written.status();
  ASSERT_LT(nats::FenceOf(**written + 10, 0, 1), 1000);  // far above the bucket's revisions
  ASSERT_TRUE(store_->Release(scope, 1000).ok());
  absl::StatusOr<ClaimResult> claim = store_->Claim(MakeClaim(scope, "new/1"));
  ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();
  EXPECT_GT(claim->record.fence, 1000);
  EXPECT_EQ(testing::CodeOf(store_->Complete(scope, 1000, SampleResponse(200))),
            absl::StatusCode::kAborted);
  // The same after a purge (`idem keys purge`): its marker keeps the fence too.
  ASSERT_TRUE(store_->Purge(scope).ok());
  absl::StatusOr<ClaimResult> after_purge = store_->Claim(MakeClaim(scope, "new/2"));
  ASSERT_TRUE(after_purge.ok() && after_purge->claimed) << after_purge.status();
  EXPECT_GT(after_purge->record.fence, claim->record.fence);
}

// A handle opened later draws fences above every revision of the bucket when it opened, so a
// key claimed through it never gets a fence a key had before, whichever handle drew that one.
TEST_F(NatsFence, AHandleOpenedLaterDrawsHigherFences) {
  int64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<ClaimResult> claim = store_->Claim(MakeClaim(MakeScope(fmt::format("a{}", i))));
    ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();
    last = std::max(last, claim->record.fence);
  }
  absl::StatusOr<std::unique_ptr<Store>> later = OpenStore(store_uri_);
  ASSERT_TRUE(later.ok()) << later.status();
  absl::StatusOr<ClaimResult> claim = (*later)->Claim(MakeClaim(MakeScope("b")));
  ASSERT_TRUE(claim.ok() && claim->claimed) << claim.status();
  EXPECT_GT(claim->record.fence, last);
}

}  // namespace
}  // namespace idem
