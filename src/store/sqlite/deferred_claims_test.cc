// Claims of new keys in the store's own SQLite transactions are written once, with their outcome
// (deferred_claims.h): what that saves, and that no caller can tell the difference.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

#include "idem/sqlite_store.h"
#include "idem/store.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using idem::testing::CodeOf;
using idem::testing::MakeClaim;
using idem::testing::MakeScope;

constexpr std::string_view kFingerprint = "fp";

class DeferredClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "idem-deferred-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    absl::StatusOr<std::unique_ptr<Store>> store =
        OpenSqliteStore(pattern + "/idem.db", "", StoreOptions{});
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

  std::unique_ptr<Store> store_;
  const StoredResponse ok_{.status = 201, .body = "made"};
};

TEST_F(DeferredClaimsTest, AFinishedClaimOfANewKeyLeavesTheFenceCounterAlone) {
  const int64_t before = Counter();
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  auto claim = (*tx)->Claim(MakeScope("k"), kFingerprint, "w");
  ASSERT_TRUE(claim.ok() && claim->claimed);
  EXPECT_GT(claim->record.fence, before);
  ASSERT_TRUE((*tx)->Finish(MakeScope("k"), claim->record.fence, KeyState::kCompleted, ok_).ok());
  ASSERT_TRUE((*tx)->Commit().ok());
  EXPECT_EQ(Counter(), before);
  auto got = store_->Get(MakeScope("k"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state, KeyState::kCompleted);
  EXPECT_EQ(got->fence, claim->record.fence);
  EXPECT_EQ(got->response, ok_);
}

TEST_F(DeferredClaimsTest, ClaimsOfOneTransactionTakeDistinctGrowingFences) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  auto first = (*tx)->Claim(MakeScope("a"), kFingerprint, "w");
  auto second = (*tx)->Claim(MakeScope("b"), kFingerprint, "w");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_GT(second->record.fence, first->record.fence);
}

TEST_F(DeferredClaimsTest, ASecondClaimOfTheKeyInItsTransactionFindsItHeld) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  auto first = (*tx)->Claim(MakeScope("k"), kFingerprint, "w");
  auto again = (*tx)->Claim(MakeScope("k"), kFingerprint, "other");
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_TRUE(first->claimed);
  EXPECT_FALSE(again->claimed);
  EXPECT_EQ(again->record, first->record);
}

TEST_F(DeferredClaimsTest, SqlNamingTheStoresTablesSeesTheClaimAsItsRecord) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  auto claim = (*tx)->Claim(MakeScope("k"), kFingerprint, "w");
  ASSERT_TRUE(claim.ok());
  auto rows = (*tx)->Query("SELECT state, fence FROM IDEM_KEYS WHERE key = 'k'", {});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(std::get<std::string>((*rows)[0][0]), "in_progress");
  EXPECT_EQ(std::get<int64_t>((*rows)[0][1]), claim->record.fence);
  // From then on the claim is an ordinary row, finished by an UPDATE.
  ASSERT_TRUE((*tx)->Finish(MakeScope("k"), claim->record.fence, KeyState::kCompleted, ok_).ok());
  ASSERT_TRUE((*tx)->Commit().ok());
  EXPECT_GE(Counter(), claim->record.fence);
}

TEST_F(DeferredClaimsTest, RollingBackToASavepointForgetsLaterClaimsAndReopensLaterFinishes) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  auto kept = (*tx)->Claim(MakeScope("kept"), kFingerprint, "w");
  ASSERT_TRUE(kept.ok());
  ASSERT_TRUE((*tx)->Savepoint("s1").ok());
  auto dropped = (*tx)->Claim(MakeScope("dropped"), kFingerprint, "w");
  ASSERT_TRUE(dropped.ok());
  ASSERT_TRUE((*tx)->Finish(MakeScope("kept"), kept->record.fence, KeyState::kCompleted, ok_).ok());
  ASSERT_TRUE((*tx)->RollbackToSavepoint("S1").ok());  // names compare without case, as SQLite's
  // "dropped" is gone: finishing it finds no claim; "kept" is unfinished again.
  EXPECT_EQ(CodeOf((*tx)->Finish(MakeScope("dropped"), dropped->record.fence,
                                 KeyState::kCompleted, ok_)),
            StatusCode::kAborted);
  const StoredResponse failed{.status = 409, .body = "declined"};
  ASSERT_TRUE(
      (*tx)->Finish(MakeScope("kept"), kept->record.fence, KeyState::kFailedFinal, failed).ok());
  ASSERT_TRUE((*tx)->Commit().ok());
  auto got = store_->Get(MakeScope("kept"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->state, KeyState::kFailedFinal);
  EXPECT_EQ(got->response, failed);
  EXPECT_EQ(CodeOf(store_->Get(MakeScope("dropped"))), StatusCode::kNotFound);
}

TEST_F(DeferredClaimsTest, ACallersOwnSavepointStatementKeepsTheClaimAsARow) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  auto claim = (*tx)->Claim(MakeScope("k"), kFingerprint, "w");
  ASSERT_TRUE(claim.ok());
  ASSERT_TRUE((*tx)->Execute("SAVEPOINT mine", {}).ok());
  ASSERT_TRUE((*tx)->Execute("ROLLBACK TO mine", {}).ok());
  // The claim was written before the savepoint, so rolling back to it kept the claim.
  ASSERT_TRUE((*tx)->Finish(MakeScope("k"), claim->record.fence, KeyState::kCompleted, ok_).ok());
  ASSERT_TRUE((*tx)->Commit().ok());
  EXPECT_EQ(store_->Get(MakeScope("k"))->state, KeyState::kCompleted);
}

TEST_F(DeferredClaimsTest, ACommittedUnfinishedClaimIsAnInProgressRecordWithItsFenceCounted) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  auto claim = (*tx)->Claim(MakeScope("k"), kFingerprint, "w");
  ASSERT_TRUE(claim.ok());
  ASSERT_TRUE((*tx)->Commit().ok());
  auto got = store_->Get(MakeScope("k"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, claim->record);
  EXPECT_EQ(Counter(), claim->record.fence);
  // A lease-mode claim of another key draws past it.
  auto next = store_->Claim(MakeClaim(MakeScope("other")));
  ASSERT_TRUE(next.ok());
  EXPECT_GT(next->record.fence, claim->record.fence);
}

TEST_F(DeferredClaimsTest, ARolledBackClaimLeavesNoTrace) {
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
