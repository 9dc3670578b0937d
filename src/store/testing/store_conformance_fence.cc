// The conformance suite, fencing across the whole life of a key (idem/store.h, "Fences"): a
// holder whose lease lapsed can never write over whoever came after it, even after the record
// was deleted (released or swept) and claimed afresh, and a lapsed claim is taken over only by
// the same request.
#include <latch>
#include <thread>
#include <vector>

#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

using absl::StatusCode;

constexpr Millis kShortLease = 1s;

// Every fenced write of a holder whose fence is stale is refused and changes nothing.
void ExpectFencedOut(Store& store, const Scope& scope, int64_t stale_fence) {
  EXPECT_EQ(CodeOf(store.Complete(scope, stale_fence, SampleResponse(200))), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store.FailFinal(scope, stale_fence, SampleResponse(400))), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store.Heartbeat(scope, stale_fence, 30s)), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store.Release(scope, stale_fence)), StatusCode::kAborted);
}

// The sequence: A stalls past its lease, B takes over and releases after a transient
// outcome, C claims afresh; A wakes up and must find every write refused.
TEST_P(StoreConformanceTest, StalledHolderIsFencedOutAfterReleaseAndFreshClaim) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult a,
                            store_->Claim(MakeClaim(scope, "A", kFingerprint, kShortLease)));
  clock_.Advance(kShortLease + 1ms);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord b, store_->TakeOver(MakeClaim(scope, "B"), a.record.fence));
  IDEM_ASSERT_OK(store_->Release(scope, b.fence));
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult c, store_->Claim(MakeClaim(scope, "C")));
  ASSERT_TRUE(c.claimed);
  EXPECT_NE(c.record.fence, a.record.fence);
  EXPECT_NE(c.record.fence, b.fence);
  ExpectFencedOut(*store_, scope, a.record.fence);
  ExpectFencedOut(*store_, scope, b.fence);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got, c.record);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult fourth, store_->Claim(MakeClaim(scope, "D")));
  EXPECT_FALSE(fourth.claimed);
  EXPECT_EQ(fourth.record.owner, "C");
  IDEM_ASSERT_OK(store_->Complete(scope, c.record.fence, SampleResponse(201)));
}

// The same, where the sweeper (not a release) removed the record: A's claim outlived retention.
TEST_P(StoreConformanceTest, StalledHolderIsFencedOutAfterSweepAndFreshClaim) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult a,
                            store_->Claim(MakeClaim(scope, "A", kFingerprint, kShortLease)));
  clock_.Advance(kRetention);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t swept, store_->SweepExpired(10));
  ASSERT_EQ(swept, 1);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult c, store_->Claim(MakeClaim(scope, "C")));
  ASSERT_TRUE(c.claimed);
  EXPECT_NE(c.record.fence, a.record.fence);
  ExpectFencedOut(*store_, scope, a.record.fence);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got, c.record);
}

// A swept completed record, claimed again in transaction mode: the new claim's fence is new too.
TEST_P(StoreConformanceTest, TransactionClaimAfterReleaseNeverReusesAFence) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult a,
                            store_->Claim(MakeClaim(scope, "A", kFingerprint, kShortLease)));
  clock_.Advance(kShortLease);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord b, store_->TakeOver(MakeClaim(scope, "B"), a.record.fence));
  IDEM_ASSERT_OK(store_->Release(scope, b.fence));
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult c, tx->Claim(scope, kFingerprint, "C"));
  ASSERT_TRUE(c.claimed);
  EXPECT_NE(c.record.fence, a.record.fence);
  EXPECT_NE(c.record.fence, b.fence);
  IDEM_ASSERT_OK(tx->Commit());  // committed unfinished, as a crash after COMMIT would leave it
  ExpectFencedOut(*store_, scope, a.record.fence);
  ExpectFencedOut(*store_, scope, b.fence);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.owner, "C");
  EXPECT_EQ(got.fence, c.record.fence);
}

TEST_P(StoreConformanceTest, FencesGrowAcrossReleasesAndKeys) {
  const Scope scope = MakeScope("k1");
  int64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
    ASSERT_TRUE(claim.claimed);
    EXPECT_GT(claim.record.fence, last);
    last = claim.record.fence;
    IDEM_ASSERT_OK(store_->Release(scope, claim.record.fence));
  }
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult other, store_->Claim(MakeClaim(MakeScope("k2"))));
  EXPECT_GT(other.record.fence, last);
}

// Fences strictly grow per key across two store handles (two gateways on one keyspace), whatever
// either drew for keys it found held (duplicates), across takeovers and releases, and across a
// change of the keyspace's leader where it has one: a stale fence never matches a later claim.
// (On JetStream, a handle whose 30 duplicates drew fences that never landed handed out a fence
// that the other's later claim of the key got again, and the stale holder's Complete went
// through.)
TEST_P(StoreConformanceTest, FencesStrictlyGrowPerKeyAcrossHandlesDuplicatesReleasesTakeovers) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> other, OpenAgain());
  Store& a = *store_;
  Store& b = *other;
  const Scope x = MakeScope("x");
  const Scope k = MakeScope("k");
  std::vector<int64_t> fences;  // every fence k held, in order
  const auto held = [&](int64_t fence) {
    if (!fences.empty()) {
      EXPECT_GT(fence, fences.back()) << "after fences " << fences.size();
    }
    fences.push_back(fence);
  };
  const auto duplicates = [&](Store& store, int n) {
    for (int i = 0; i < n; ++i) {
      absl::StatusOr<ClaimResult> dup = store.Claim(MakeClaim(x, "dup"));
      ASSERT_TRUE(dup.ok()) << dup.status();
      ASSERT_FALSE(dup->claimed);
    }
    const std::vector<LeaseWrite> batch(3, LeaseWrite{.kind = LeaseWrite::Kind::kClaim,
                                                      .scope = x,
                                                      .fingerprint = kFingerprint,
                                                      .owner = "dup",
                                                      .lease = kLease});
    IDEM_ASSERT_OK_AND_ASSIGN(std::vector<LeaseWriteResult> results, store.ApplyLeaseBatch(batch));
    for (const LeaseWriteResult& r : results) EXPECT_FALSE(r.claimed) << r.status;
  };
  // B claims and completes X; A sees 30 duplicates of it.
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult bx, b.Claim(MakeClaim(x, "B")));
  IDEM_ASSERT_OK(b.Complete(x, bx.record.fence, SampleResponse()));
  duplicates(a, 30);
  // A claims K with a short lease and stalls; B takes it over and releases it.
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult stalled,
                            a.Claim(MakeClaim(k, "A", kFingerprint, kShortLease)));
  ASSERT_TRUE(stalled.claimed);
  held(stalled.record.fence);
  clock_.Advance(kShortLease + 1ms);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord taken, b.TakeOver(MakeClaim(k, "B"), stalled.record.fence));
  held(taken.fence);
  IDEM_ASSERT_OK(b.Release(k, taken.fence));
  if (GetParam().change_leader) IDEM_ASSERT_OK(GetParam().change_leader());
  // Claims of K from either handle, duplicates of X between them, every third one taken over by
  // the other handle; each ends in a release.
  for (int round = 0; round < 12; ++round) {
    Store& claimer = round % 2 == 0 ? b : a;
    Store& taker = round % 2 == 0 ? a : b;
    duplicates(claimer, 5);
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim,
                              claimer.Claim(MakeClaim(k, "C", kFingerprint, kShortLease)));
    ASSERT_TRUE(claim.claimed) << "round " << round;
    held(claim.record.fence);
    Store* holder = &claimer;
    int64_t fence = claim.record.fence;
    if (round % 3 == 0) {
      clock_.Advance(kShortLease + 1ms);
      IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord again, taker.TakeOver(MakeClaim(k, "T"), fence));
      held(again.fence);
      holder = &taker;
      fence = again.fence;
    }
    EXPECT_EQ(CodeOf(a.Complete(k, stalled.record.fence, SampleResponse(200))),
              StatusCode::kAborted)
        << "round " << round;
    IDEM_ASSERT_OK(holder->Release(k, fence));
  }
  // B holds K at last: every earlier fence, from either handle, is refused.
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult last, b.Claim(MakeClaim(k, "B")));
  ASSERT_TRUE(last.claimed);
  held(last.record.fence);
  ExpectFencedOut(a, k, stalled.record.fence);
  for (size_t i = 0; i + 1 < fences.size(); ++i) {
    EXPECT_EQ(CodeOf(a.Complete(k, fences[i], SampleResponse(200))), StatusCode::kAborted) << i;
    EXPECT_EQ(CodeOf(b.Complete(k, fences[i], SampleResponse(200))), StatusCode::kAborted) << i;
  }
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, a.Get(k));
  EXPECT_EQ(got.state, KeyState::kInProgress);
  EXPECT_EQ(got.fence, last.record.fence);
  EXPECT_EQ(got.owner, "B");
}

TEST_P(StoreConformanceTest, TakeOverByAnotherRequestIsFailedPreconditionAndChangesNothing) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult a, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kLease);
  EXPECT_EQ(
      CodeOf(store_->TakeOver(MakeClaim(scope, "worker-2", kOtherFingerprint), a.record.fence)),
      StatusCode::kFailedPrecondition);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got, a.record);
}

// A lapsed lease-mode claim of request X is not taken over in transaction mode by request Y.
TEST_P(StoreConformanceTest, TransactionClaimLeavesALapsedClaimOfAnotherRequestAlone) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult x, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kLease + 1s);
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult y, tx->Claim(scope, kOtherFingerprint, "worker-2"));
    EXPECT_FALSE(y.claimed);
    EXPECT_EQ(y.record, x.record);
    IDEM_ASSERT_OK(tx->Commit());
  }
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got, x.record);
}

// A claim that turns an expired record live again, racing the sweeper: whichever runs first, the
// sweeper never deletes the live claim.
TEST_P(StoreConformanceTest, SweepRacingAClaimOfAnExpiredRecordNeverDeletesTheClaim) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, first.record.fence, SampleResponse()));
  clock_.Advance(kRetention);
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> other, OpenAgain());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-2"));
  ASSERT_TRUE(claim.claimed);
  std::latch started(1);
  absl::StatusOr<int64_t> swept = absl::UnknownError("not run");
  std::thread sweeper([&] {
    started.count_down();
    swept = other->SweepExpired(10);
  });
  started.wait();
  IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse(200)));
  IDEM_ASSERT_OK(tx->Commit());
  sweeper.join();
  ASSERT_TRUE(swept.ok()) << swept.status();
  EXPECT_EQ(*swept, 0);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.owner, "worker-2");
  EXPECT_EQ(got.response, SampleResponse(200));
}

}  // namespace
}  // namespace idem::testing
