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
