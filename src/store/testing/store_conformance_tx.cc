// The conformance suite, transaction mode: the claim, the caller's writes and the outcome commit
// or roll back together (idem/store.h, StoreTransaction).
#include <atomic>
#include <latch>
#include <thread>

#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

using absl::StatusCode;

// The business table the effects write; SQL that SQLite and PostgreSQL both accept.
absl::Status PrepareEffectsTable(Store& store) {
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
  if (!tx.ok()) return tx.status();
  absl::Status status =
      (*tx)
          ->Execute(
              "CREATE TABLE IF NOT EXISTS conformance_effects (id TEXT PRIMARY KEY, amount BIGINT)")
          .status();
  if (status.ok()) status = (*tx)->Execute("DELETE FROM conformance_effects").status();
  if (status.ok()) status = (*tx)->Commit();
  return status;
}

absl::Status InsertEffect(Transaction& tx, const std::string& id, int64_t amount) {
  const SqlValue params[] = {id, amount};
  absl::StatusOr<int64_t> changed =
      tx.Execute("INSERT INTO conformance_effects (id, amount) VALUES ($1, $2)", params);
  if (!changed.ok()) return changed.status();
  return *changed == 1 ? absl::OkStatus() : absl::InternalError("insert changed no row");
}

TEST_P(StoreConformanceTest, TransactionClaimEffectAndFinishCommitTogether) {
  IDEM_ASSERT_OK(PrepareEffectsTable(*store_));
  const Scope scope = MakeScope("t1");
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
    ASSERT_TRUE(claim.claimed);
    EXPECT_GT(claim.record.fence, 0);
    EXPECT_EQ(claim.record.state, KeyState::kInProgress);
    IDEM_ASSERT_OK(InsertEffect(*tx, "e1", 100));
    IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
    IDEM_ASSERT_OK(tx->Commit());
  }
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.state, KeyState::kCompleted);
  EXPECT_EQ(got.response, SampleResponse());
  EXPECT_EQ(got.expires_ms, clock_.NowMillis() + kRetention.count());
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t effects, CountRows(*store_, "conformance_effects"));
  EXPECT_EQ(effects, 1);
}

TEST_P(StoreConformanceTest, TransactionRollbackLeavesNoClaimAndNoEffect) {
  IDEM_ASSERT_OK(PrepareEffectsTable(*store_));
  const Scope scope = MakeScope("t1");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
  ASSERT_TRUE(claim.claimed);
  IDEM_ASSERT_OK(InsertEffect(*tx, "e1", 100));
  // Nobody sees the claim before commit.
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  IDEM_ASSERT_OK(tx->Rollback());
  IDEM_ASSERT_OK(tx->Rollback());  // idempotent
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t effects, CountRows(*store_, "conformance_effects"));
  EXPECT_EQ(effects, 0);
}

TEST_P(StoreConformanceTest, DestroyingAnUncommittedTransactionRollsItBack) {
  IDEM_ASSERT_OK(PrepareEffectsTable(*store_));
  const Scope scope = MakeScope("t1");
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
    IDEM_ASSERT_OK(tx->Claim(scope, kFingerprint, "worker-1").status());
    IDEM_ASSERT_OK(InsertEffect(*tx, "e1", 100));
  }
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t effects, CountRows(*store_, "conformance_effects"));
  EXPECT_EQ(effects, 0);
}

TEST_P(StoreConformanceTest, SavepointRollbackUndoesTheEffectButKeepsTheClaim) {
  IDEM_ASSERT_OK(PrepareEffectsTable(*store_));
  const Scope scope = MakeScope("t1");
  const StoredResponse error{409, {{"Content-Type", "application/problem+json"}}, "no funds"};
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
    IDEM_ASSERT_OK(tx->Savepoint("effect"));
    IDEM_ASSERT_OK(InsertEffect(*tx, "e1", 100));
    IDEM_ASSERT_OK(tx->RollbackToSavepoint("effect"));
    IDEM_ASSERT_OK(tx->ReleaseSavepoint("effect"));
    IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kFailedFinal, error));
    IDEM_ASSERT_OK(tx->Commit());
  }
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord got, store_->Get(scope));
  EXPECT_EQ(got.state, KeyState::kFailedFinal);
  EXPECT_EQ(got.response, error);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t effects, CountRows(*store_, "conformance_effects"));
  EXPECT_EQ(effects, 0);
}

TEST_P(StoreConformanceTest, TransactionClaimOfFinishedRecordReturnsIt) {
  const Scope scope = MakeScope("t1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, first.record.fence, SampleResponse()));
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord stored, store_->Get(scope));
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kOtherFingerprint, "worker-2"));
  EXPECT_FALSE(claim.claimed);
  EXPECT_EQ(claim.record, stored);
  IDEM_ASSERT_OK(tx->Rollback());
}

TEST_P(StoreConformanceTest, TransactionClaimOfLiveLeaseReturnsItAndOfLapsedLeaseTakesOver) {
  const Scope scope = MakeScope("t1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult lease, store_->Claim(MakeClaim(scope)));
  {
    IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
    IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-2"));
    EXPECT_FALSE(claim.claimed);
    EXPECT_EQ(claim.record, lease.record);
  }
  clock_.Advance(kLease);
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-2"));
  EXPECT_TRUE(claim.claimed);
  EXPECT_GT(claim.record.fence, lease.record.fence);
  EXPECT_EQ(claim.record.owner, "worker-2");
  IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
  IDEM_ASSERT_OK(tx->Commit());
  EXPECT_EQ(CodeOf(store_->Complete(scope, lease.record.fence, SampleResponse(200))),
            StatusCode::kAborted);
}

TEST_P(StoreConformanceTest, TransactionClaimReplacesExpiredRecordWithAGreaterFence) {
  const Scope scope = MakeScope("t1");
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, store_->Claim(MakeClaim(scope)));
  IDEM_ASSERT_OK(store_->Complete(scope, first.record.fence, SampleResponse()));
  clock_.Advance(kRetention);
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kOtherFingerprint, "worker-2"));
  EXPECT_TRUE(claim.claimed);
  EXPECT_GT(claim.record.fence, first.record.fence);
  EXPECT_EQ(claim.record.fingerprint, kOtherFingerprint);
  EXPECT_EQ(claim.record.response, StoredResponse{});
  IDEM_ASSERT_OK(tx->Commit());
}

TEST_P(StoreConformanceTest, FinishWithWrongFenceIsAbortedAndWithInProgressIsInvalidArgument) {
  const Scope scope = MakeScope("t1");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
  EXPECT_EQ(CodeOf(tx->Finish(scope, claim.record.fence, KeyState::kInProgress, {})),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(tx->Finish(scope, claim.record.fence + 1, KeyState::kCompleted, {})),
            StatusCode::kAborted);
  EXPECT_EQ(CodeOf(tx->Finish(MakeScope("other"), 1, KeyState::kCompleted, {})),
            StatusCode::kAborted);
  IDEM_ASSERT_OK(tx->Rollback());
}

// Runs two transactions on one key: the first claims, then a second thread claims while the
// first is open; the first then commits (or rolls back) and the second's claim returns after.
void RaceTwoTransactions(Store& store, bool first_commits) {
  const Scope scope = MakeScope("contended");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> first, store.Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, first->Claim(scope, kFingerprint, "first"));
  ASSERT_TRUE(claim.claimed);
  std::latch second_started(1);
  std::atomic<bool> first_ending{false};
  bool second_returned_before_first_ended = false;
  absl::StatusOr<ClaimResult> second_claim = absl::UnknownError("not run");
  std::thread second([&] {
    second_started.count_down();
    absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
    if (!tx.ok()) {
      second_claim = tx.status();
      return;
    }
    second_claim = (*tx)->Claim(scope, kFingerprint, "second");
    second_returned_before_first_ended = !first_ending.load();
    if (second_claim.ok() && second_claim->claimed) {
      (*tx)
          ->Finish(scope, second_claim->record.fence, KeyState::kCompleted, SampleResponse(200))
          .IgnoreError();
    }
    (*tx)->Commit().IgnoreError();
  });
  second_started.wait();
  first_ending.store(true);
  if (first_commits) {
    IDEM_EXPECT_OK(
        first->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
    IDEM_EXPECT_OK(first->Commit());
  } else {
    IDEM_EXPECT_OK(first->Rollback());
  }
  second.join();
  ASSERT_TRUE(second_claim.ok()) << second_claim.status();
  EXPECT_FALSE(second_returned_before_first_ended);
  if (first_commits) {
    EXPECT_FALSE(second_claim->claimed);
    EXPECT_EQ(second_claim->record.owner, "first");
    EXPECT_EQ(second_claim->record.state, KeyState::kCompleted);
    EXPECT_EQ(second_claim->record.response, SampleResponse());
  } else {
    EXPECT_TRUE(second_claim->claimed);
    EXPECT_EQ(second_claim->record.owner, "second");
    EXPECT_GT(second_claim->record.fence, 0);
  }
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord stored, store.Get(scope));
  EXPECT_EQ(stored.owner, first_commits ? "first" : "second");
  EXPECT_EQ(stored.state, KeyState::kCompleted);
}

TEST_P(StoreConformanceTest, ConcurrentTransactionClaimWaitsForCommitThenSeesTheRecord) {
  RaceTwoTransactions(*store_, /*first_commits=*/true);
}

TEST_P(StoreConformanceTest, ConcurrentTransactionClaimWaitsForRollbackThenClaims) {
  RaceTwoTransactions(*store_, /*first_commits=*/false);
}

TEST_P(StoreConformanceTest, AnotherHandleSeesTransactionCommits) {
  IDEM_ASSERT_OK(PrepareEffectsTable(*store_));
  const Scope scope = MakeScope("t1");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
  IDEM_ASSERT_OK(InsertEffect(*tx, "e1", 5));
  IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
  IDEM_ASSERT_OK(tx->Commit());
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Store> other, OpenAgain());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord seen, other->Get(scope));
  EXPECT_EQ(seen.response, SampleResponse());
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t effects, CountRows(*other, "conformance_effects"));
  EXPECT_EQ(effects, 1);
}

}  // namespace
}  // namespace idem::testing
