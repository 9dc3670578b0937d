// The conformance suite, lease writes in one batch (Store::ApplyLeaseBatch): each write keeps its
// single call's meaning, claims take over lapsed leases themselves, finishing is idempotent.
#include <vector>

#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

using absl::StatusCode;

LeaseWrite ClaimWrite(const Scope& scope, std::string owner = "worker-1",
                      std::string fingerprint = kFingerprint) {
  return {.kind = LeaseWrite::Kind::kClaim,
          .scope = scope,
          .fingerprint = std::move(fingerprint),
          .owner = std::move(owner),
          .lease = kLease};
}

LeaseWrite FencedWrite(LeaseWrite::Kind kind, const Scope& scope, int64_t fence) {
  LeaseWrite write{.kind = kind, .scope = scope, .lease = kLease, .fence = fence};
  if (kind == LeaseWrite::Kind::kComplete) write.response = SampleResponse();
  if (kind == LeaseWrite::Kind::kFailFinal) write.response = SampleResponse(400);
  return write;
}

TEST_P(StoreConformanceTest, BatchGivesEachWriteItsOwnResultInOrder) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult held, store_->Claim(MakeClaim(MakeScope("held"))));
  const std::vector<LeaseWrite> writes = {
      ClaimWrite(MakeScope("fresh")),
      FencedWrite(LeaseWrite::Kind::kComplete, MakeScope("held"), held.record.fence + 1000),
      ClaimWrite(MakeScope("held"), "worker-2"),
      FencedWrite(LeaseWrite::Kind::kComplete, MakeScope("held"), held.record.fence)};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  ASSERT_EQ(results.size(), 4u);
  IDEM_EXPECT_OK(results[0].status);
  EXPECT_TRUE(results[0].claimed);
  EXPECT_EQ(results[0].record.owner, "worker-1");
  EXPECT_EQ(results[0].lease_until_ms, clock_.NowMillis() + kLease.count());
  EXPECT_EQ(CodeOf(results[1].status), StatusCode::kAborted);  // a stale fence, nothing written
  IDEM_EXPECT_OK(results[2].status);                           // live in-flight: a result
  EXPECT_FALSE(results[2].claimed);
  EXPECT_EQ(results[2].record.state, KeyState::kInProgress);
  EXPECT_EQ(results[2].record.lease_until_ms, held.record.lease_until_ms);
  EXPECT_EQ(results[2].now_ms, clock_.NowMillis());
  IDEM_EXPECT_OK(results[3].status);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord done, store_->Get(MakeScope("held")));
  EXPECT_EQ(done.state, KeyState::kCompleted);
  EXPECT_EQ(done.response, SampleResponse());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord fresh, store_->Get(MakeScope("fresh")));
  EXPECT_EQ(fresh, results[0].record);
}

TEST_P(StoreConformanceTest, BatchClaimTakesOverALapsedLeaseOfTheSameRequestOnly) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, store_->Claim(MakeClaim(MakeScope("k"))));
  IDEM_ASSERT_OK(store_->Claim(MakeClaim(MakeScope("other"))).status());
  clock_.Advance(kLease + 1ms);
  const std::vector<LeaseWrite> writes = {ClaimWrite(MakeScope("k"), "worker-2"),
                                          ClaimWrite(MakeScope("other"), "w", kOtherFingerprint)};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  ASSERT_EQ(results.size(), 2u);
  IDEM_EXPECT_OK(results[0].status);
  EXPECT_TRUE(results[0].claimed);
  EXPECT_TRUE(results[0].taken_over);
  EXPECT_NE(results[0].record.fence, first.record.fence);
  EXPECT_EQ(results[0].record.owner, "worker-2");
  EXPECT_EQ(results[0].lease_until_ms, clock_.NowMillis() + kLease.count());
  IDEM_EXPECT_OK(results[1].status);  // another request's lapsed lease stays its own
  EXPECT_FALSE(results[1].claimed);
  EXPECT_EQ(results[1].record.fingerprint, kFingerprint);
  // The old holder's fence no longer writes.
  EXPECT_EQ(CodeOf(store_->Complete(MakeScope("k"), first.record.fence, SampleResponse())),
            StatusCode::kAborted);
}

TEST_P(StoreConformanceTest, BatchFinishIsIdempotentForTheSameFenceAndOutcomeOnly) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult a, store_->Claim(MakeClaim(MakeScope("a"))));
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult b, store_->Claim(MakeClaim(MakeScope("b"))));
  const std::vector<LeaseWrite> once = {
      FencedWrite(LeaseWrite::Kind::kComplete, MakeScope("a"), a.record.fence),
      FencedWrite(LeaseWrite::Kind::kFailFinal, MakeScope("b"), b.record.fence)};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> first, store_->ApplyLeaseBatch(once));
  IDEM_EXPECT_OK(first[0].status);
  IDEM_EXPECT_OK(first[1].status);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord before, store_->Get(MakeScope("a")));
  clock_.Advance(1s);
  // The same writes again (a retry after a lost connection): OK, nothing changes.
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> again, store_->ApplyLeaseBatch(once));
  IDEM_EXPECT_OK(again[0].status);
  IDEM_EXPECT_OK(again[1].status);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord after, store_->Get(MakeScope("a")));
  EXPECT_EQ(after, before);
  // Another outcome, another state or another fence is not the same write.
  LeaseWrite other_body = FencedWrite(LeaseWrite::Kind::kComplete, MakeScope("a"), a.record.fence);
  other_body.response.body = "another body";
  const std::vector<LeaseWrite> different = {
      other_body, FencedWrite(LeaseWrite::Kind::kFailFinal, MakeScope("a"), a.record.fence),
      FencedWrite(LeaseWrite::Kind::kComplete, MakeScope("b"), b.record.fence),
      FencedWrite(LeaseWrite::Kind::kComplete, MakeScope("a"), a.record.fence + 1000)};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results,
                            store_->ApplyLeaseBatch(different));
  for (const LeaseWriteResult& result : results) {
    EXPECT_EQ(CodeOf(result.status), StatusCode::kAborted) << result.status;
  }
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord unchanged, store_->Get(MakeScope("a")));
  EXPECT_EQ(unchanged, before);
}

TEST_P(StoreConformanceTest, BatchHeartbeatReturnsTheNewLeaseEnd) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(MakeScope("k"))));
  clock_.Advance(10s);
  const std::vector<LeaseWrite> writes = {
      FencedWrite(LeaseWrite::Kind::kHeartbeat, MakeScope("k"), claim.record.fence),
      FencedWrite(LeaseWrite::Kind::kHeartbeat, MakeScope("k"), claim.record.fence + 1000)};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  IDEM_EXPECT_OK(results[0].status);
  EXPECT_EQ(results[0].lease_until_ms, clock_.NowMillis() + kLease.count());
  EXPECT_EQ(CodeOf(results[1].status), StatusCode::kAborted);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord record, store_->Get(MakeScope("k")));
  EXPECT_EQ(record.lease_until_ms, results[0].lease_until_ms);
}

TEST_P(StoreConformanceTest, BatchWritesOnOneScopeApplyInOrder) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(MakeScope("k"))));
  const std::vector<LeaseWrite> writes = {
      FencedWrite(LeaseWrite::Kind::kRelease, MakeScope("k"), claim.record.fence),
      ClaimWrite(MakeScope("k"), "worker-2", kOtherFingerprint)};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  IDEM_EXPECT_OK(results[0].status);
  IDEM_EXPECT_OK(results[1].status);
  EXPECT_TRUE(results[1].claimed);
  EXPECT_FALSE(results[1].taken_over);
  EXPECT_EQ(results[1].record.fingerprint, kOtherFingerprint);
  EXPECT_NE(results[1].record.fence, claim.record.fence);
}

TEST_P(StoreConformanceTest, BatchMalformedScopeFailsThatWriteAlone) {
  const std::vector<LeaseWrite> writes = {ClaimWrite(MakeScope("has space")),
                                          ClaimWrite(MakeScope("good"))};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  EXPECT_EQ(CodeOf(results[0].status), StatusCode::kInvalidArgument);
  IDEM_EXPECT_OK(results[1].status);
  EXPECT_TRUE(results[1].claimed);
}

TEST_P(StoreConformanceTest, BatchClaimsDrawDistinctFencesFromTheStoreWideCounter) {
  const std::vector<LeaseWrite> writes = {ClaimWrite(MakeScope("a")), ClaimWrite(MakeScope("b")),
                                          ClaimWrite(MakeScope("a"), "worker-2"),
                                          ClaimWrite(MakeScope("c"))};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  EXPECT_TRUE(results[0].claimed);
  EXPECT_TRUE(results[1].claimed);
  EXPECT_FALSE(results[2].claimed);  // "a" is live: blocked, no fence spent on it
  EXPECT_EQ(results[2].record.fence, results[0].record.fence);
  EXPECT_TRUE(results[3].claimed);
  if (GetParam().store_wide_fences) {
    EXPECT_LT(results[0].record.fence, results[1].record.fence);
    EXPECT_LT(results[1].record.fence, results[3].record.fence);
  }
  // The next claim, single or batched, draws past every fence the batch handed out.
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult next, store_->Claim(MakeClaim(MakeScope("d"))));
  EXPECT_GT(next.record.fence, results[3].record.fence);
}

TEST_P(StoreConformanceTest, BatchClaimReplacesAnExpiredRecordOfAnyRequest) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult old, store_->Claim(MakeClaim(MakeScope("k"))));
  IDEM_ASSERT_OK(store_->Complete(MakeScope("k"), old.record.fence, SampleResponse()));
  clock_.Advance(kRetention + 1ms);
  const std::vector<LeaseWrite> writes = {
      ClaimWrite(MakeScope("k"), "worker-2", kOtherFingerprint)};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  IDEM_EXPECT_OK(results[0].status);
  EXPECT_TRUE(results[0].claimed);
  EXPECT_FALSE(results[0].taken_over);
  EXPECT_GT(results[0].record.fence, old.record.fence);
  EXPECT_EQ(results[0].record.created_ms, results[0].now_ms);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord record, store_->Get(MakeScope("k")));
  EXPECT_EQ(record, results[0].record);
  EXPECT_EQ(record.state, KeyState::kInProgress);
  EXPECT_EQ(record.response, StoredResponse());
}

TEST_P(StoreConformanceTest, BatchTakeoverKeepsTheRecordsCreatedTime) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, store_->Claim(MakeClaim(MakeScope("k"))));
  clock_.Advance(kLease + 5s);
  const std::vector<LeaseWrite> writes = {ClaimWrite(MakeScope("k"), "worker-2")};
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch(writes));
  EXPECT_TRUE(results[0].taken_over);
  EXPECT_EQ(results[0].record.created_ms, first.record.created_ms);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord record, store_->Get(MakeScope("k")));
  EXPECT_EQ(record, results[0].record);
}

TEST_P(StoreConformanceTest, EmptyBatchIsEmpty) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store_->ApplyLeaseBatch({}));
  EXPECT_TRUE(results.empty());
}

}  // namespace
}  // namespace idem::testing
