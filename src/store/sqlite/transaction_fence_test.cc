// Fences of claims made in the store's own SQLite transactions (transaction_claims.h): a claim of
// a key without a record takes the counter's next value without advancing it, unless it is
// committed unfinished; every key's fences still strictly grow, whatever happened to its record.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "idem/sqlite_store.h"
#include "idem/store.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using idem::testing::CodeOf;
using idem::testing::kFingerprint;
using idem::testing::MakeClaim;
using idem::testing::MakeScope;

constexpr Millis kRetention = std::chrono::hours(1);

class TransactionFenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "idem-txfence-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(
        pattern + "/idem.db", "", StoreOptions{.clock = &clock_, .retention = kRetention});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // The fence counter's value, read in a transaction of its own.
  int64_t Counter() {
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok());
    auto rows = (*tx)->Query("SELECT last FROM idem_fence", {});
    EXPECT_TRUE(rows.ok()) << rows.status();
    return std::get<int64_t>((*rows)[0][0]);
  }

  // Claims `key` in a transaction of its own and, unless `finish` is false, completes it; returns
  // the claim's fence.
  int64_t ClaimInTransaction(std::string_view key, bool finish = true) {
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok());
    auto claim = (*tx)->Claim(MakeScope(std::string(key)), kFingerprint, "w");
    EXPECT_TRUE(claim.ok() && claim->claimed) << claim.status();
    if (finish) {
      EXPECT_TRUE(
          (*tx)->Finish(MakeScope(std::string(key)), claim->record.fence, KeyState::kCompleted, ok_).ok());
    }
    EXPECT_TRUE((*tx)->Commit().ok());
    return claim->record.fence;
  }

  ManualClock clock_;
  std::unique_ptr<Store> store_;
  const StoredResponse ok_{.status = 201, .body = "made"};
};

TEST_F(TransactionFenceTest, AFinishedClaimOfANewKeyLeavesTheFenceCounterAlone) {
  const int64_t before = Counter();
  const int64_t fence = ClaimInTransaction("k");
  EXPECT_GT(fence, before);
  EXPECT_EQ(Counter(), before);
  auto got = store_->Get(MakeScope("k"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state, KeyState::kCompleted);
  EXPECT_EQ(got->fence, fence);
  EXPECT_EQ(got->response, ok_);
}

TEST_F(TransactionFenceTest, ClaimsOfOneTransactionTakeDistinctGrowingFences) {
  // "old" has an expired record: its claim draws from the counter, the others do not.
  const int64_t old_fence = ClaimInTransaction("old");
  clock_.Advance(kRetention);
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  std::vector<int64_t> fences;
  for (std::string_view key : {"a", "old", "b"}) {
    auto claim = (*tx)->Claim(MakeScope(std::string(key)), kFingerprint, "w");
    ASSERT_TRUE(claim.ok() && claim->claimed) << key << " " << claim.status();
    if (!fences.empty()) {
      EXPECT_GT(claim->record.fence, fences.back()) << key;
    }
    fences.push_back(claim->record.fence);
  }
  EXPECT_GT(fences[1], old_fence);
}

TEST_F(TransactionFenceTest, ACommittedUnfinishedClaimHasItsFenceCountedAndATakeoverGoesPastIt) {
  const int64_t fence = ClaimInTransaction("k", /*finish=*/false);
  EXPECT_EQ(Counter(), fence);
  auto got = store_->Get(MakeScope("k"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state, KeyState::kInProgress);
  EXPECT_EQ(got->fence, fence);
  // The claim's lease passes; a takeover gets a greater fence and the old one is refused.
  clock_.Advance(ClaimRequest{}.lease);
  auto taken = store_->TakeOver(MakeClaim(MakeScope("k"), "t", std::string(kFingerprint)), fence);
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_GT(taken->fence, fence);
  EXPECT_EQ(CodeOf(store_->Complete(MakeScope("k"), fence, ok_)), StatusCode::kAborted);
  auto next = store_->Claim(MakeClaim(MakeScope("other")));
  ASSERT_TRUE(next.ok());
  EXPECT_GT(next->record.fence, taken->fence);
}

TEST_F(TransactionFenceTest, AnExpiredFinishedRecordIsReplacedWithAGreaterFenceInEveryMode) {
  // Each finished record's fence is above the counter; each replacement must still go past it.
  const int64_t lease_mode = ClaimInTransaction("lease");
  const int64_t batch = ClaimInTransaction("batch");
  const int64_t transaction = ClaimInTransaction("tx");
  ASSERT_GT(lease_mode, Counter());
  clock_.Advance(kRetention);
  auto claimed = store_->Claim(MakeClaim(MakeScope("lease")));
  ASSERT_TRUE(claimed.ok() && claimed->claimed) << claimed.status();
  EXPECT_GT(claimed->record.fence, lease_mode);
  const std::vector<LeaseWrite> writes{{.kind = LeaseWrite::Kind::kClaim,
                                        .scope = MakeScope("batch"),
                                        .fingerprint = std::string(kFingerprint),
                                        .owner = "w",
                                        .lease = ClaimRequest{}.lease}};
  auto results = store_->ApplyLeaseBatch(writes);
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_TRUE((*results)[0].claimed) << (*results)[0].status;
  EXPECT_GT((*results)[0].record.fence, batch);
  EXPECT_GT(ClaimInTransaction("tx"), transaction);
  // A fence handed out after those is greater than each.
  auto after = store_->Claim(MakeClaim(MakeScope("after")));
  ASSERT_TRUE(after.ok());
  EXPECT_GT(after->record.fence, (*results)[0].record.fence);
  EXPECT_GT(after->record.fence, claimed->record.fence);
}

TEST_F(TransactionFenceTest, ASweptOrPurgedFinishedRecordsKeyIsClaimedAgainWithAGreaterFence) {
  const int64_t swept = ClaimInTransaction("swept");
  const int64_t purged = ClaimInTransaction("purged");
  ASSERT_TRUE(store_->Purge(MakeScope("purged")).ok());
  EXPECT_GE(Counter(), purged);
  EXPECT_GT(ClaimInTransaction("purged"), purged);
  clock_.Advance(kRetention);
  auto deleted = store_->SweepExpired(10);
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(*deleted, 2);  // "swept" and the second "purged"
  EXPECT_GE(Counter(), swept);
  EXPECT_GT(ClaimInTransaction("swept"), swept);
  auto lease = store_->Claim(MakeClaim(MakeScope("swept2")));
  ASSERT_TRUE(lease.ok());
  EXPECT_GT(lease->record.fence, swept);
}

TEST_F(TransactionFenceTest, ARolledBackClaimLeavesNoTrace) {
  const int64_t before = Counter();
  {
    auto tx = store_->Begin();
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE((*tx)->Claim(MakeScope("k"), kFingerprint, "w").ok());
    ASSERT_TRUE((*tx)->Rollback().ok());
  }
  EXPECT_EQ(CodeOf(store_->Get(MakeScope("k"))), StatusCode::kNotFound);
  EXPECT_EQ(Counter(), before);
}

}  // namespace
}  // namespace idem
