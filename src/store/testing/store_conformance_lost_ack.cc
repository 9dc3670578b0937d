// The conformance suite, lost acknowledgements (StoreLostAckTest): a lease write that went through
// but whose answer was lost (LostAckStore: applied, then Unavailable) is resolved by its retry
// through Store::ApplyLeaseBatch, which reads the record: the caller's own claim (its nonce, never
// its owner label) is claimed, its own heartbeat extends the lease again, its own outcome is
// accepted, its own release finds the key released; someone else's record is Aborted, as for any
// stale fence.
#include <fmt/format.h>

#include <memory>
#include <vector>

#include "idem/uuid.h"
#include "store/testing/conformance_helpers.h"
#include "store/testing/lost_ack_store.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {

// A binary that links the suite without instantiating these cases (the key service's) is fine.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(StoreLostAckTest);

namespace {

using absl::StatusCode;
using Kind = LeaseWrite::Kind;

// A claim attempt with a nonce of its own, as every caller draws one (LeaseWrite::claim_nonce).
LeaseWrite ClaimBy(const Scope& scope, std::string owner) {
  return {.kind = Kind::kClaim,
          .scope = scope,
          .fingerprint = kFingerprint,
          .owner = std::move(owner),
          .lease = kLease,
          .claim_nonce = NewClaimNonce()};
}

LeaseWrite Fenced(Kind kind, const Scope& scope, int64_t fence) {
  LeaseWrite write{.kind = kind, .scope = scope, .lease = kLease, .fence = fence};
  if (kind == Kind::kComplete) write.response = SampleResponse();
  if (kind == Kind::kFailFinal) write.response = SampleResponse(400);
  return write;
}

// The one result of a batch of one write, or the batch's error as its status.
LeaseWriteResult One(Store& store, const LeaseWrite& write) {
  absl::StatusOr<std::vector<LeaseWriteResult>> results = store.ApplyLeaseBatch({&write, 1});
  if (!results.ok()) return {.status = results.status()};
  if (results->size() != 1) return {.status = absl::InternalError("not one result")};
  return std::move(results->front());
}

TEST_P(StoreLostAckTest, LostAckOfAClaimIsResolvedByItsRetryAsClaimed) {
  const Scope scope = MakeScope("k");
  LostAckStore lossy(*store_);
  lossy.LoseAcks(Kind::kClaim);
  const LeaseWrite claim = ClaimBy(scope, "worker-1/7");
  EXPECT_EQ(CodeOf(One(lossy, claim).status), StatusCode::kUnavailable);
  EXPECT_EQ(lossy.acks_lost(), 1);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord stored, store_->Get(scope));  // it went through
  clock_.Advance(1s);
  const LeaseWriteResult retry = One(lossy, claim);
  IDEM_ASSERT_OK(retry.status);
  EXPECT_TRUE(retry.claimed);
  EXPECT_FALSE(retry.taken_over);
  EXPECT_EQ(retry.record, stored);  // carried on from the store: no second fence drawn
  EXPECT_EQ(retry.lease_until_ms, stored.lease_until_ms);
  EXPECT_EQ(retry.now_ms, clock_.NowMillis());
  EXPECT_EQ(stored.claim_nonce, claim.claim_nonce);
  // Another claim of the same request is not told it holds the key: not with another owner, not
  // with the same owner and another nonce or none (even marked unique_owner, as callers once did).
  const LeaseWriteResult other = One(*store_, ClaimBy(scope, "worker-1/8"));
  IDEM_ASSERT_OK(other.status);
  EXPECT_FALSE(other.claimed);
  EXPECT_EQ(other.record, stored);
  LeaseWrite same_owner = ClaimBy(scope, claim.owner);
  same_owner.unique_owner = true;
  for (const std::string& nonce : {same_owner.claim_nonce, std::string()}) {
    same_owner.claim_nonce = nonce;
    const LeaseWriteResult same = One(*store_, same_owner);
    IDEM_ASSERT_OK(same.status);
    EXPECT_FALSE(same.claimed) << "nonce '" << nonce << "'";
    EXPECT_EQ(same.record, stored);
  }
  EXPECT_EQ(CodeOf(One(*store_, Fenced(Kind::kComplete, scope, stored.fence)).status),
            StatusCode::kOk);
}

// Issue 37, item 3: two processes configured with one owner label ("orders-worker"), or PID 1 of
// two containers on one host with the default owner. The first one's claim went through but its
// acknowledgement was lost; the second claims the same request through its own store handle.
// Only the first, retrying, is told it holds the key.
TEST_P(StoreLostAckTest, TwoClaimsSharingAnOwnerLabelNeverBothHoldTheKeyAfterALostAck) {
  const Scope scope = MakeScope("k");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> second_process, OpenAgain());
  LostAckStore lossy(*store_);
  lossy.LoseAcks(Kind::kClaim);
  LeaseWrite first = ClaimBy(scope, "orders-worker/1");
  first.unique_owner = true;  // what LeaseGuard sent before claims had nonces
  LeaseWrite second = ClaimBy(scope, "orders-worker/1");
  second.unique_owner = true;
  EXPECT_EQ(CodeOf(One(lossy, first).status), StatusCode::kUnavailable);
  const LeaseWriteResult by_second = One(*second_process, second);
  IDEM_ASSERT_OK(by_second.status);
  EXPECT_FALSE(by_second.claimed);
  EXPECT_EQ(by_second.record.owner, "orders-worker/1");
  const LeaseWriteResult retry = One(lossy, first);
  IDEM_ASSERT_OK(retry.status);
  EXPECT_TRUE(retry.claimed);
  EXPECT_EQ(retry.record.fence, by_second.record.fence);
  // The second one's own retry (its claim was answered, but it may not know) is no luckier.
  const LeaseWriteResult second_retry = One(*second_process, second);
  IDEM_ASSERT_OK(second_retry.status);
  EXPECT_FALSE(second_retry.claimed);
  // Only the holder's fence writes the outcome.
  IDEM_EXPECT_OK(One(*store_, Fenced(Kind::kComplete, scope, retry.record.fence)).status);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord done, second_process->Get(scope));
  EXPECT_EQ(done.state, KeyState::kCompleted);
}

TEST_P(StoreLostAckTest, LostAckOfATakeoverIsResolvedByItsRetryAsTakenOver) {
  const Scope scope = MakeScope("k");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, store_->Claim(MakeClaim(scope, "worker-1/1")));
  clock_.Advance(kLease + 1ms);
  LostAckStore lossy(*store_);
  lossy.LoseAcks(Kind::kClaim);
  const LeaseWrite claim = ClaimBy(scope, "worker-2/1");
  EXPECT_EQ(CodeOf(One(lossy, claim).status), StatusCode::kUnavailable);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord stored, store_->Get(scope));
  ASSERT_EQ(stored.owner, "worker-2/1");
  const LeaseWriteResult retry = One(lossy, claim);
  IDEM_ASSERT_OK(retry.status);
  EXPECT_TRUE(retry.claimed);
  EXPECT_TRUE(retry.taken_over);
  EXPECT_EQ(retry.record, stored);
  EXPECT_NE(retry.record.fence, first.record.fence);
  EXPECT_EQ(CodeOf(One(*store_, Fenced(Kind::kComplete, scope, first.record.fence)).status),
            StatusCode::kAborted);
}

TEST_P(StoreLostAckTest, LostAckOfAHeartbeatIsResolvedByItsRetry) {
  const Scope scope = MakeScope("k");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(10s);
  LostAckStore lossy(*store_);
  lossy.LoseAcks(Kind::kHeartbeat);
  const LeaseWrite beat = Fenced(Kind::kHeartbeat, scope, claim.record.fence);
  EXPECT_EQ(CodeOf(One(lossy, beat).status), StatusCode::kUnavailable);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord applied, store_->Get(scope));
  EXPECT_EQ(applied.lease_until_ms, clock_.NowMillis() + kLease.count());
  clock_.Advance(1s);
  const LeaseWriteResult retry = One(lossy, beat);
  IDEM_ASSERT_OK(retry.status);
  EXPECT_EQ(retry.lease_until_ms, clock_.NowMillis() + kLease.count());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord record, store_->Get(scope));
  EXPECT_EQ(record.lease_until_ms, retry.lease_until_ms);
  EXPECT_EQ(record.fence, claim.record.fence);
}

// The outcome's write went through; its retry (the same write) is accepted and changes nothing.
void ExpectLostFinishResolved(Store& store, ManualClock& clock, Kind kind) {
  const Scope scope = MakeScope("k");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store.Claim(MakeClaim(scope)));
  LostAckStore lossy(store);
  lossy.LoseAcks(kind);
  const LeaseWrite finish = Fenced(kind, scope, claim.record.fence);
  EXPECT_EQ(CodeOf(One(lossy, finish).status), StatusCode::kUnavailable);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord applied, store.Get(scope));
  EXPECT_EQ(applied.state, kind == Kind::kComplete ? KeyState::kCompleted : KeyState::kFailedFinal);
  clock.Advance(1s);
  IDEM_EXPECT_OK(One(lossy, finish).status);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord after, store.Get(scope));
  EXPECT_EQ(after, applied);
  // Another outcome is not a retry of this one.
  LeaseWrite other = finish;
  other.response.body = "another body";
  EXPECT_EQ(CodeOf(One(lossy, other).status), StatusCode::kAborted);
}

TEST_P(StoreLostAckTest, LostAckOfACompleteIsResolvedByItsRetry) {
  ExpectLostFinishResolved(*store_, clock_, Kind::kComplete);
}

TEST_P(StoreLostAckTest, LostAckOfAFailFinalIsResolvedByItsRetry) {
  ExpectLostFinishResolved(*store_, clock_, Kind::kFailFinal);
}

TEST_P(StoreLostAckTest, LostAckOfAReleaseIsResolvedByItsRetry) {
  const Scope scope = MakeScope("k");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  LostAckStore lossy(*store_);
  lossy.LoseAcks(Kind::kRelease);
  const LeaseWrite release = Fenced(Kind::kRelease, scope, claim.record.fence);
  EXPECT_EQ(CodeOf(One(lossy, release).status), StatusCode::kUnavailable);
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  IDEM_EXPECT_OK(One(lossy, release).status);  // released already: not a lost lease
  // Once someone else holds the key, the release is refused: the key is not this holder's.
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult next, store_->Claim(MakeClaim(scope, "worker-2")));
  ASSERT_TRUE(next.claimed);
  EXPECT_EQ(CodeOf(One(lossy, release).status), StatusCode::kAborted);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord record, store_->Get(scope));
  EXPECT_EQ(record, next.record);
}

// What a lost acknowledgement looks like to a store handle that remembers what it wrote (the
// NATS store remembers each claim's revision): the heartbeat applied, but this handle never
// learnt its new revision. Its outcome, single or batched, must still be recorded.
TEST_P(StoreLostAckTest, OutcomeAfterAHeartbeatThisHandleDidNotSeeIsRecorded) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> other, OpenAgain());
  for (Kind kind : {Kind::kComplete, Kind::kFailFinal}) {
    for (bool batch : {false, true}) {
      const Scope scope = MakeScope(fmt::format("k-{}-{}", static_cast<int>(kind), batch));
      IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
      clock_.Advance(1s);
      IDEM_ASSERT_OK(other->Heartbeat(scope, claim.record.fence, kLease));
      const LeaseWrite finish = Fenced(kind, scope, claim.record.fence);
      const absl::Status status =
          batch                     ? One(*store_, finish).status
          : kind == Kind::kComplete ? store_->Complete(scope, claim.record.fence, finish.response)
                                    : store_->FailFinal(scope, claim.record.fence, finish.response);
      IDEM_EXPECT_OK(status);
      IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord record, store_->Get(scope));
      EXPECT_EQ(record.response, finish.response);
    }
  }
}

TEST_P(StoreLostAckTest, ReleaseOfAKeyNoLongerLiveIsOk) {
  // Never claimed: nothing is held, so there is nothing to give up.
  IDEM_EXPECT_OK(store_->Release(MakeScope("absent"), 1));
  IDEM_EXPECT_OK(One(*store_, Fenced(Kind::kRelease, MakeScope("absent"), 1)).status);
  // Claimed, then expired unfinished (a record counts as absent once it has expired).
  const Scope scope = MakeScope("expired");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kRetention + 1ms);
  IDEM_EXPECT_OK(store_->Release(scope, claim.record.fence));
  IDEM_EXPECT_OK(One(*store_, Fenced(Kind::kRelease, scope, claim.record.fence)).status);
}

// A group commit retries its whole batch when the batch's outcome is unknown: each write finds
// what its first attempt did.
TEST_P(StoreLostAckTest, ARetriedBatchWhoseAckWasLostResolvesEveryWrite) {
  std::vector<int64_t> fences;
  for (const char* key : {"beat", "done", "failed", "released"}) {
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(MakeScope(key))));
    fences.push_back(claim.record.fence);
  }
  clock_.Advance(5s);
  const std::vector<LeaseWrite> batch = {ClaimBy(MakeScope("new"), "worker-1/1"),
                                         Fenced(Kind::kHeartbeat, MakeScope("beat"), fences[0]),
                                         Fenced(Kind::kComplete, MakeScope("done"), fences[1]),
                                         Fenced(Kind::kFailFinal, MakeScope("failed"), fences[2]),
                                         Fenced(Kind::kRelease, MakeScope("released"), fences[3])};
  LostAckStore lossy(*store_);
  lossy.LoseAcks(Kind::kClaim);
  EXPECT_EQ(CodeOf(lossy.ApplyLeaseBatch(batch)), StatusCode::kUnavailable);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord claimed, store_->Get(MakeScope("new")));
  clock_.Advance(1s);
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, lossy.ApplyLeaseBatch(batch));
  ASSERT_EQ(results.size(), batch.size());
  for (const LeaseWriteResult& result : results) IDEM_EXPECT_OK(result.status);
  EXPECT_TRUE(results[0].claimed);
  EXPECT_EQ(results[0].record, claimed);
  EXPECT_EQ(results[1].lease_until_ms, clock_.NowMillis() + kLease.count());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord done, store_->Get(MakeScope("done")));
  EXPECT_EQ(done.state, KeyState::kCompleted);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord failed, store_->Get(MakeScope("failed")));
  EXPECT_EQ(failed.state, KeyState::kFailedFinal);
  EXPECT_EQ(CodeOf(store_->Get(MakeScope("released"))), StatusCode::kNotFound);
}

}  // namespace
}  // namespace idem::testing
