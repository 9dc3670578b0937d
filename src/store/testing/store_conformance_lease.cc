// The conformance suite, lease mode: each call commits on its own (idem/store.h).
#include <latch>
#include <thread>
#include <vector>

#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

using absl::StatusCode;

TEST_P(StoreConformanceTest, FirstClaimWinsWithAFenceAndALease) {
  const int64_t now = clock_.NowMillis();
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(MakeScope("k1"))));
  EXPECT_TRUE(claim.claimed);
  EXPECT_EQ(claim.record.scope, MakeScope("k1"));
  EXPECT_EQ(claim.record.fingerprint, kFingerprint);
  EXPECT_EQ(claim.record.state, KeyState::kInProgress);
  EXPECT_GT(claim.record.fence, 0);
  EXPECT_EQ(claim.record.owner, "worker-1");
  EXPECT_EQ(claim.record.lease_until_ms, now + kLease.count());
  EXPECT_EQ(claim.record.created_ms, now);
  EXPECT_EQ(claim.record.updated_ms, now);
  EXPECT_GE(claim.record.expires_ms, now + kRetention.count());
  EXPECT_EQ(claim.record.response, StoredResponse{});
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(MakeScope("k1")));
  EXPECT_EQ(got, claim.record);
}

TEST_P(StoreConformanceTest, SecondClaimOfLiveKeyReportsTheRecordAndKeepsItsFingerprint) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, store_->Claim(MakeClaim(MakeScope("k1"))));
  clock_.Advance(1s);
  IDEM_ASSERT_OK_AND_ASSIGN(
      ClaimResult second, store_->Claim(MakeClaim(MakeScope("k1"), "worker-2", kOtherFingerprint)));
  EXPECT_FALSE(second.claimed);
  EXPECT_EQ(second.record, first.record);
  EXPECT_EQ(second.record.fingerprint, kFingerprint);
  EXPECT_EQ(second.record.owner, "worker-1");
}

TEST_P(StoreConformanceTest, GetOfAbsentKeyIsNotFound) {
  EXPECT_EQ(CodeOf(store_->Get(MakeScope("never-claimed"))), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, MalformedScopeIsInvalidArgumentAndStoresNothing) {
  for (const std::string& key : {std::string(), std::string("has space"), std::string(256, 'k'),
                                 std::string("tab\tkey"), std::string("caf\xc3\xa9")}) {
    EXPECT_EQ(CodeOf(store_->Claim(MakeClaim(MakeScope(key)))), StatusCode::kInvalidArgument)
        << "key '" << key << "'";
    EXPECT_EQ(CodeOf(store_->Get(MakeScope(key))), StatusCode::kInvalidArgument);
  }
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t swept, store_->SweepExpired(100));
  EXPECT_EQ(swept, 0);
}

TEST_P(StoreConformanceTest, KeysWithQuotesAndSqlCharactersAreStoredVerbatim) {
  const Scope scope = MakeScope("a'b\"c;--%_\\x", "t'); DROP TABLE idem_keys;--");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  EXPECT_TRUE(claim.claimed);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.scope, scope);
  EXPECT_EQ(CodeOf(store_->Get(MakeScope("a'b\"c;--%_\\y", scope.tenant))), StatusCode::kNotFound);
}

TEST_P(StoreConformanceTest, TenantsNeverCollide) {
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult a, store_->Claim(MakeClaim(MakeScope("k", "tenant-a"))));
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult b, store_->Claim(MakeClaim(MakeScope("k", "tenant-b"))));
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult global, store_->Claim(MakeClaim(MakeScope("k", ""))));
  EXPECT_TRUE(a.claimed);
  EXPECT_TRUE(b.claimed);
  EXPECT_TRUE(global.claimed);
  IDEM_ASSERT_OK(store_->Complete(MakeScope("k", "tenant-a"), a.record.fence, SampleResponse()));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord still_b, store_->Get(MakeScope("k", "tenant-b")));
  EXPECT_EQ(still_b.state, KeyState::kInProgress);
  IDEM_ASSERT_OK(store_->Release(MakeScope("k", ""), global.record.fence));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord still_a, store_->Get(MakeScope("k", "tenant-a")));
  EXPECT_EQ(still_a.state, KeyState::kCompleted);
}

TEST_P(StoreConformanceTest, HeartbeatExtendsTheLease) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(20s);
  IDEM_ASSERT_OK(store_->Heartbeat(scope, claim.record.fence, 30s));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.lease_until_ms, clock_.NowMillis() + 30'000);
  EXPECT_EQ(got.updated_ms, clock_.NowMillis());
  clock_.Advance(20s);  // past the first lease, inside the extended one
  EXPECT_EQ(CodeOf(store_->TakeOver(MakeClaim(scope, "worker-2"), claim.record.fence)),
            StatusCode::kAborted);
}

TEST_P(StoreConformanceTest, StaleFenceWritesAreAbortedAndChangeNothing) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  const int64_t stale = claim.record.fence + 1;
  clock_.Advance(1s);
  EXPECT_EQ(CodeOf(store_->Heartbeat(scope, stale, 60s)), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Complete(scope, stale, SampleResponse())), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->FailFinal(scope, stale, SampleResponse(400))), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Release(scope, stale)), StatusCode::kAborted);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got, claim.record);
}

TEST_P(StoreConformanceTest, WritesToAnAbsentKeyAreAborted) {
  const Scope scope = MakeScope("absent");
  EXPECT_EQ(CodeOf(store_->Heartbeat(scope, 1, 30s)), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Complete(scope, 1, SampleResponse())), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->FailFinal(scope, 1, SampleResponse(400))), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);  // (a release is OK: nothing held)
}

TEST_P(StoreConformanceTest, CompleteStoresTheResponseByteForByte) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(2s);
  IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, SampleResponse()));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.state, KeyState::kCompleted);
  EXPECT_EQ(got.response, SampleResponse());
  EXPECT_EQ(got.response.body.size(), 16u);
  EXPECT_EQ(got.fence, claim.record.fence);
  EXPECT_EQ(got.fingerprint, kFingerprint);
  EXPECT_EQ(got.created_ms, claim.record.created_ms);
  EXPECT_EQ(got.updated_ms, clock_.NowMillis());
  EXPECT_EQ(got.expires_ms, clock_.NowMillis() + kRetention.count());
}

TEST_P(StoreConformanceTest, FailFinalStoresTheErrorForReplay) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  StoredResponse error{422, {{"Content-Type", "application/problem+json"}}, "{\"title\":\"x\"}"};
  IDEM_ASSERT_OK(store_->FailFinal(scope, claim.record.fence, error));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.state, KeyState::kFailedFinal);
  EXPECT_EQ(got.response, error);
  EXPECT_EQ(got.expires_ms, clock_.NowMillis() + kRetention.count());
}

TEST_P(StoreConformanceTest, EmptyResponseRoundTrips) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, StoredResponse{204, {}, ""}));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.response, (StoredResponse{204, {}, ""}));
}

TEST_P(StoreConformanceTest, AFinishedRecordTakesNoSecondOutcome) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, SampleResponse()));
  EXPECT_EQ(CodeOf(store_->Complete(scope, claim.record.fence, SampleResponse(200))),
            StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->FailFinal(scope, claim.record.fence, SampleResponse(400))),
            StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Release(scope, claim.record.fence)), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Heartbeat(scope, claim.record.fence, 30s)), StatusCode::kAborted);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.response, SampleResponse());
}

TEST_P(StoreConformanceTest, ReleaseMakesTheKeyAbsentAndClaimableAgain) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Release(scope, claim.record.fence));
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult again, store_->Claim(MakeClaim(scope, "worker-2")));
  EXPECT_TRUE(again.claimed);
  EXPECT_EQ(again.record.owner, "worker-2");
}

TEST_P(StoreConformanceTest, TakeOverWhileTheLeaseIsLiveIsAborted) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kLease - 1ms);
  EXPECT_EQ(CodeOf(store_->TakeOver(MakeClaim(scope, "worker-2"), claim.record.fence)),
            StatusCode::kAborted);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got, claim.record);
}

// A lease holds during [claim, lease_until): at lease_until it has passed (like expires_ms).
TEST_P(StoreConformanceTest, TakeOverAtLeaseEndGivesAGreaterFenceAndANewLease) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kLease);
  IDEM_ASSERT_OK_AND_ASSIGN(
      KeyRecord taken,
      store_->TakeOver(MakeClaim(scope, "worker-2", kFingerprint, 10s), claim.record.fence));
  EXPECT_GT(taken.fence, claim.record.fence);
  EXPECT_EQ(taken.owner, "worker-2");
  EXPECT_EQ(taken.state, KeyState::kInProgress);
  EXPECT_EQ(taken.lease_until_ms, clock_.NowMillis() + 10'000);
  EXPECT_EQ(taken.fingerprint, kFingerprint);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got, taken);
}

TEST_P(StoreConformanceTest, OldHolderIsFencedOutAfterTakeOver) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kLease + 1s);
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord taken,
                            store_->TakeOver(MakeClaim(scope, "worker-2"), claim.record.fence));
  const int64_t old_fence = claim.record.fence;
  EXPECT_EQ(CodeOf(store_->Complete(scope, old_fence, SampleResponse())), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Heartbeat(scope, old_fence, 30s)), StatusCode::kAborted);
  EXPECT_EQ(CodeOf(store_->Release(scope, old_fence)), StatusCode::kAborted);
  // A second taker that read the old fence loses too.
  EXPECT_EQ(CodeOf(store_->TakeOver(MakeClaim(scope, "worker-3"), old_fence)),
            StatusCode::kAborted);
  IDEM_ASSERT_OK(store_->Complete(scope, taken.fence, SampleResponse(200)));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.owner, "worker-2");
  EXPECT_EQ(got.response, SampleResponse(200));
}

TEST_P(StoreConformanceTest, TakeOverOfAbsentKeyIsNotFoundAndOfFinishedKeyIsAborted) {
  EXPECT_EQ(CodeOf(store_->TakeOver(MakeClaim(MakeScope("absent")), 1)), StatusCode::kNotFound);
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, SampleResponse()));
  clock_.Advance(kLease + 1s);
  EXPECT_EQ(CodeOf(store_->TakeOver(MakeClaim(scope, "worker-2"), claim.record.fence)),
            StatusCode::kAborted);
}

TEST_P(StoreConformanceTest, LeaseModeClaimOfLapsedLeaseReportsItWithoutTakingOver) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kLease + 1s);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult second, store_->Claim(MakeClaim(scope, "worker-2")));
  EXPECT_FALSE(second.claimed);
  EXPECT_EQ(second.record, claim.record);
}

TEST_P(StoreConformanceTest, ExpiredCompletedRecordCountsAsAbsentAndIsReplacedWithAGreaterFence) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, SampleResponse()));
  clock_.Advance(kRetention - 1ms);
  IDEM_ASSERT_OK(store_->Get(scope).status());
  clock_.Advance(1ms);  // exactly expires_ms: absent from now on
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult again,
                            store_->Claim(MakeClaim(scope, "worker-2", kOtherFingerprint)));
  EXPECT_TRUE(again.claimed);
  EXPECT_GT(again.record.fence, claim.record.fence);
  EXPECT_EQ(again.record.state, KeyState::kInProgress);
  EXPECT_EQ(again.record.fingerprint, kOtherFingerprint);
  EXPECT_EQ(again.record.owner, "worker-2");
  EXPECT_EQ(again.record.created_ms, clock_.NowMillis());
  EXPECT_EQ(again.record.response, StoredResponse{});
}

TEST_P(StoreConformanceTest, AbandonedInProgressRecordExpiresAfterRetention) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  clock_.Advance(kRetention);
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  EXPECT_EQ(CodeOf(store_->Complete(scope, claim.record.fence, SampleResponse())),
            StatusCode::kAborted);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult again, store_->Claim(MakeClaim(scope, "worker-2")));
  EXPECT_TRUE(again.claimed);
  EXPECT_GT(again.record.fence, claim.record.fence);
}

TEST_P(StoreConformanceTest, SweepDeletesOnlyExpiredRecordsInBatches) {
  for (int i = 0; i < 5; ++i) {
    const Scope scope = MakeScope("old-" + std::to_string(i));
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
    IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, SampleResponse()));
  }
  clock_.Advance(kRetention / 2);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult fresh, store_->Claim(MakeClaim(MakeScope("fresh"))));
  IDEM_ASSERT_OK(store_->Complete(MakeScope("fresh"), fresh.record.fence, SampleResponse()));
  IDEM_ASSERT_OK(store_->Claim(MakeClaim(MakeScope("running"), "w", kFingerprint, 1h)).status());
  clock_.Advance(kRetention / 2);
  std::vector<int64_t> batches;
  for (int i = 0; i < 5; ++i) {
    IDEM_ASSERT_OK_AND_ASSIGN(int64_t deleted, store_->SweepExpired(2));
    batches.push_back(deleted);
  }
  EXPECT_EQ(batches, (std::vector<int64_t>{2, 2, 1, 0, 0}));
  IDEM_ASSERT_OK(store_->Get(MakeScope("fresh")).status());
  IDEM_ASSERT_OK(store_->Get(MakeScope("running")).status());
}

TEST_P(StoreConformanceTest, SweepKeepsInProgressRecordWhileItsLeaseIsLive) {
  const Scope scope = MakeScope("long-lease");
  IDEM_ASSERT_OK(store_->Claim(MakeClaim(scope, "w", kFingerprint, 48h)).status());
  clock_.Advance(kRetention + 1h);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t while_leased, store_->SweepExpired(10));
  EXPECT_EQ(while_leased, 0);
  clock_.Advance(24h);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t after_lease, store_->SweepExpired(10));
  EXPECT_EQ(after_lease, 1);
}

TEST_P(StoreConformanceTest, SweepWithNonPositiveMaxRowsIsInvalidArgument) {
  EXPECT_EQ(CodeOf(store_->SweepExpired(0)), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(store_->SweepExpired(-1)), StatusCode::kInvalidArgument);
}

TEST_P(StoreConformanceTest, ANonPositiveLeaseIsInvalidArgumentSayingWhatToGiveAndClaimsNothing) {
  const Scope scope = MakeScope("no-lease");
  for (const Millis lease : {Millis(0), Millis(-1000)}) {
    const absl::StatusOr<ClaimResult> claimed =
        store_->Claim(MakeClaim(scope, "w", kFingerprint, lease));
    EXPECT_EQ(CodeOf(claimed), StatusCode::kInvalidArgument) << lease.count();
    EXPECT_NE(claimed.status().message().find("give a positive lease"), std::string_view::npos)
        << claimed.status();
  }
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult valid, store_->Claim(MakeClaim(scope, "w2")));
  EXPECT_TRUE(valid.claimed) << "a refused claim must leave the key free";
}

TEST_P(StoreConformanceTest, ManyThreadsClaimingOneKeyExactlyOneWins) {
  constexpr int kThreads = 8;
  std::latch start(kThreads);
  std::vector<absl::StatusOr<ClaimResult>> results(kThreads, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i] = store_->Claim(MakeClaim(MakeScope("hot"), "worker-" + std::to_string(i)));
    });
  }
  for (std::thread& thread : threads) thread.join();
  int winners = 0;
  std::string winner;
  for (const auto& result : results) {
    ASSERT_TRUE(result.ok()) << result.status();
    if (result->claimed) {
      ++winners;
      winner = result->record.owner;
    }
  }
  ASSERT_EQ(winners, 1);
  for (const auto& result : results) {
    EXPECT_EQ(result->record.owner, winner);
    EXPECT_EQ(result->record.fence, results.front()->record.fence);
  }
}

TEST_P(StoreConformanceTest, AnotherHandleSeesTheSameRecords) {
  const Scope scope = MakeScope("k1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, claim.record.fence, SampleResponse()));
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> other, OpenAgain());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord seen, other->Get(scope));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord mine, store_->Get(scope));
  EXPECT_EQ(seen, mine);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult again, other->Claim(MakeClaim(scope, "worker-2")));
  EXPECT_FALSE(again.claimed);
}

}  // namespace
}  // namespace idem::testing
