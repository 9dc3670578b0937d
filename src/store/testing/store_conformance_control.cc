// The conformance suite, the rules of a transaction (idem/store.h): transaction-control SQL is
// refused whatever precedes it, a failed statement leaves the transaction good only for rolling
// back, and an ended transaction refuses every later call. The same codes on every store.
#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

using absl::StatusCode;

constexpr char kCreateRows[] = "CREATE TABLE IF NOT EXISTS control_rows (id BIGINT PRIMARY KEY)";

absl::Status CreateRowsTable(Store& store) {
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
  if (!tx.ok()) return tx.status();
  absl::Status status = (*tx)->Execute(kCreateRows).status();
  return status.ok() ? (*tx)->Commit() : status;
}

absl::Status InsertRow(Transaction& tx, int64_t id) {
  const SqlValue params[] = {id};
  return tx.Execute("INSERT INTO control_rows (id) VALUES ($1)", params).status();
}

// An effect's COMMIT hidden behind a comment committed the claim mid-effect on SQLite, and on
// PostgreSQL nothing was refused at all.
TEST_P(StoreConformanceTest, TransactionControlSqlIsRefusedWhateverPrecedesItAndRunsNothing) {
  const Scope scope = MakeScope("c1");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
  IDEM_ASSERT_OK(tx->Savepoint("idem_effect"));
  for (const char* sql :
       {"/* note */ COMMIT", "-- why\n  END", "  \n BEGIN", "ROLLBACK", "/**/ rollback work",
        "START TRANSACTION", "ABORT", "RELEASE SAVEPOINT idem_effect",
        "ROLLBACK TO SAVEPOINT idem_effect", "SAVEPOINT idem_effect"}) {
    EXPECT_EQ(CodeOf(tx->Execute(sql)), StatusCode::kInvalidArgument) << sql;
    EXPECT_EQ(CodeOf(tx->Query(sql)), StatusCode::kInvalidArgument) << sql;
    // Nothing was committed: another handle still sees no record.
    EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound) << sql;
  }
  IDEM_ASSERT_OK(tx->Doomed());
  IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
  IDEM_ASSERT_OK(tx->Commit());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord stored, store_->Get(scope));
  EXPECT_EQ(stored.state, KeyState::kCompleted);
}

TEST_P(StoreConformanceTest, TheEffectsOwnSavepointsStayAllowed) {
  IDEM_ASSERT_OK(CreateRowsTable(*store_));
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK(tx->Execute("SAVEPOINT mine").status());
  IDEM_ASSERT_OK(InsertRow(*tx, 1));
  IDEM_ASSERT_OK(tx->Execute("ROLLBACK TO SAVEPOINT mine").status());
  IDEM_ASSERT_OK(tx->Execute("RELEASE SAVEPOINT mine").status());
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows, tx->Query("SELECT id FROM control_rows"));
  EXPECT_TRUE(rows.empty());
  IDEM_ASSERT_OK(tx->Commit());
}

// SQLite let an effect go on after a failed statement (ignore AlreadyExists, answer 200, and the
// outcome was recorded); PostgreSQL refused it as FailedPrecondition (a 422 at the gateway).
TEST_P(StoreConformanceTest, AfterAFailedStatementOnlyRollingBackIsAllowed) {
  IDEM_ASSERT_OK(CreateRowsTable(*store_));
  const Scope scope = MakeScope("c2");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
  IDEM_ASSERT_OK(tx->Savepoint("effect"));
  IDEM_ASSERT_OK(InsertRow(*tx, 1));
  EXPECT_EQ(CodeOf(InsertRow(*tx, 1)), StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeOf(InsertRow(*tx, 2)), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse())),
            StatusCode::kInternal);
  IDEM_ASSERT_OK(tx->Doomed());  // a savepoint still saves it
  IDEM_ASSERT_OK(tx->RollbackToSavepoint("effect"));
  IDEM_ASSERT_OK(InsertRow(*tx, 3));
  IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
  IDEM_ASSERT_OK(tx->Commit());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord stored, store_->Get(scope));
  EXPECT_EQ(stored.state, KeyState::kCompleted);
}

// SQLite refused an effect's own ROLLBACK TO, run through Execute, after a failed statement ("an
// earlier statement of this transaction failed"), so the effect could not recover; PostgreSQL
// allowed it. A rollback to a savepoint of the effect's own makes the transaction usable again.
TEST_P(StoreConformanceTest, TheEffectsOwnRollbackToSavepointThroughExecuteRecoversAFailure) {
  IDEM_ASSERT_OK(CreateRowsTable(*store_));
  const Scope scope = MakeScope("c6");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
  IDEM_ASSERT_OK(tx->Savepoint("idem_effect"));
  IDEM_ASSERT_OK(InsertRow(*tx, 1));
  IDEM_ASSERT_OK(tx->Execute("SAVEPOINT mine").status());
  IDEM_ASSERT_OK(InsertRow(*tx, 2));
  EXPECT_EQ(CodeOf(InsertRow(*tx, 1)), StatusCode::kAlreadyExists);
  IDEM_ASSERT_OK(tx->Execute("/* undo */ ROLLBACK TO SAVEPOINT mine").status());
  IDEM_ASSERT_OK(InsertRow(*tx, 3));
  EXPECT_EQ(CodeOf(InsertRow(*tx, 3)), StatusCode::kAlreadyExists);
  IDEM_ASSERT_OK(tx->Query("rollback to mine").status());  // Query too, and the short form
  IDEM_ASSERT_OK(tx->Execute("RELEASE SAVEPOINT mine").status());
  IDEM_ASSERT_OK(InsertRow(*tx, 4));
  IDEM_ASSERT_OK(tx->Doomed());
  IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
  IDEM_ASSERT_OK(tx->Commit());
  IDEM_ASSERT_OK_AND_ASSIGN(KeyRecord stored, store_->Get(scope));
  EXPECT_EQ(stored.state, KeyState::kCompleted);
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> check, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows,
                            check->Query("SELECT id FROM control_rows ORDER BY id"));
  EXPECT_EQ(rows, (std::vector<SqlRow>{{int64_t{1}}, {int64_t{4}}}));
}

// A claim the transaction already holds is not a lapsed lease: SQLite took it over (its lease
// ended at once) and handed a second fence out, so a nested guard call ran the effect twice;
// PostgreSQL returned it unclaimed. Both return it unclaimed, as it is.
TEST_P(StoreConformanceTest, ASecondClaimOfTheKeyTheTransactionHoldsReturnsItUnclaimed) {
  const Scope scope = MakeScope("c7");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult first, tx->Claim(scope, kFingerprint, "worker-1"));
  ASSERT_TRUE(first.claimed);
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult again, tx->Claim(scope, kFingerprint, "worker-1"));
  EXPECT_FALSE(again.claimed);
  EXPECT_EQ(again.record.state, KeyState::kInProgress);
  EXPECT_EQ(again.record.fence, first.record.fence);
  IDEM_ASSERT_OK(tx->Finish(scope, first.record.fence, KeyState::kCompleted, SampleResponse()));
  IDEM_ASSERT_OK(tx->Commit());
}

TEST_P(StoreConformanceTest, CommitAfterAFailedStatementIsInternalAndCommitsNothing) {
  IDEM_ASSERT_OK(CreateRowsTable(*store_));
  const Scope scope = MakeScope("c3");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK(tx->Claim(scope, kFingerprint, "worker-1").status());
  IDEM_ASSERT_OK(InsertRow(*tx, 1));
  EXPECT_EQ(CodeOf(InsertRow(*tx, 1)), StatusCode::kAlreadyExists);
  EXPECT_EQ(CodeOf(tx->Commit()), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(store_->Get(scope)), StatusCode::kNotFound);
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> check, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows, check->Query("SELECT id FROM control_rows"));
  EXPECT_TRUE(rows.empty());
}

// A finished transaction is not a reused key: never FailedPrecondition.
TEST_P(StoreConformanceTest, CallsOnAnEndedTransactionAreInternal) {
  const Scope scope = MakeScope("c4");
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK_AND_ASSIGN(ClaimResult claim, tx->Claim(scope, kFingerprint, "worker-1"));
  IDEM_ASSERT_OK(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse()));
  IDEM_ASSERT_OK(tx->Commit());
  EXPECT_EQ(CodeOf(tx->Query("SELECT 1")), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Claim(MakeScope("c5"), kFingerprint, "w")), StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Finish(scope, claim.record.fence, KeyState::kCompleted, SampleResponse())),
            StatusCode::kInternal);
  EXPECT_EQ(CodeOf(tx->Commit()), StatusCode::kInternal);
  IDEM_EXPECT_OK(tx->Rollback());
}

}  // namespace
}  // namespace idem::testing
