// Claims of new keys in the store's own SQLite transactions are written once, with their outcome
// (transaction_claims.h): what that saves, and that no caller can tell the difference, whatever
// savepoints, the caller's own included, are rolled back around them.
#include "store/sqlite/transaction_claims.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <string>

#include "idem/sqlite_store.h"
#include "idem/store.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using idem::testing::CodeOf;
using idem::testing::kFingerprint;
using idem::testing::MakeScope;

class DeferredClaimsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = ::testing::TempDir() + "idem-deferred-XXXXXX";
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    path_ = pattern + "/idem.db";
    absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path_, "", StoreOptions{});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto tx = store_->Begin();
    ASSERT_TRUE(tx.ok());
    tx_ = *std::move(tx);
  }

  // The state of `key`'s row as the transaction's own SQL sees it ("" when it has none).
  std::string RowState(std::string_view key) {
    const SqlValue param = std::string(key);
    auto rows = tx_->Query("SELECT state FROM idem_keys WHERE key = $1", {&param, 1});
    EXPECT_TRUE(rows.ok()) << rows.status();
    if (!rows.ok() || rows->empty()) return "";
    return std::get<std::string>((*rows)[0][0]);
  }

  ClaimResult Claim(std::string_view key) {
    auto claim = tx_->Claim(MakeScope(std::string(key)), kFingerprint, "w");
    EXPECT_TRUE(claim.ok()) << claim.status();
    return claim.ok() ? *claim : ClaimResult{};
  }

  absl::Status Finish(std::string_view key, const ClaimResult& claim,
                      KeyState state = KeyState::kCompleted) {
    return tx_->Finish(MakeScope(std::string(key)), claim.record.fence, state, ok_);
  }

  KeyState CommittedState(std::string_view key) {
    auto got = store_->Get(MakeScope(std::string(key)));
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? got->state : KeyState::kInProgress;
  }

  std::string path_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<StoreTransaction> tx_;
  const StoredResponse ok_{.status = 201, .body = "made"};
};

TEST_F(DeferredClaimsTest, ASecondClaimOfTheKeyInItsTransactionFindsItHeld) {
  const ClaimResult first = Claim("k");
  auto again = tx_->Claim(MakeScope("k"), kFingerprint, "other");
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(first.claimed);
  EXPECT_FALSE(again->claimed);
  EXPECT_EQ(again->record, first.record);
}

TEST_F(DeferredClaimsTest, SqlNamingTheStoresKeyTableSeesTheClaimAsItsRecord) {
  const ClaimResult claim = Claim("k");
  auto rows = tx_->Query("SELECT state, fence FROM IDEM_KEYS WHERE key = 'k'", {});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ(std::get<std::string>((*rows)[0][0]), "in_progress");
  EXPECT_EQ(std::get<int64_t>((*rows)[0][1]), claim.record.fence);
  ASSERT_TRUE(Finish("k", claim).ok());  // an UPDATE of that row from then on
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kCompleted);
}

TEST_F(DeferredClaimsTest, RollingBackToASavepointForgetsLaterClaimsAndReopensLaterFinishes) {
  const ClaimResult kept = Claim("kept");
  ASSERT_TRUE(tx_->Savepoint("s1").ok());
  const ClaimResult dropped = Claim("dropped");
  ASSERT_TRUE(Finish("kept", kept).ok());
  ASSERT_TRUE(tx_->RollbackToSavepoint("S1").ok());  // names compare without case, as SQLite's
  EXPECT_EQ(CodeOf(Finish("dropped", dropped)), StatusCode::kAborted);
  ASSERT_TRUE(Finish("kept", kept, KeyState::kFailedFinal).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("kept"), KeyState::kFailedFinal);
  EXPECT_EQ(CodeOf(store_->Get(MakeScope("dropped"))), StatusCode::kNotFound);
}

// The shape that once lost the claim: SQL naming a store table runs inside the guard's effect
// savepoint, and a deterministic failure rolls back to that savepoint before Finish.
TEST_F(DeferredClaimsTest, EffectSqlNamingTheOutboxInsideTheEffectSavepointThenFailedFinal) {
  const ClaimResult claim = Claim("k");
  ASSERT_TRUE(tx_->Savepoint("idem_effect").ok());
  ASSERT_TRUE(tx_->Query("SELECT count(*) FROM idem_outbox", {}).ok());
  ASSERT_TRUE(tx_->RollbackToSavepoint("idem_effect").ok());
  ASSERT_TRUE(Finish("k", claim, KeyState::kFailedFinal).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kFailedFinal);
}

TEST_F(DeferredClaimsTest, AClaimWrittenInsideASavepointIsWrittenAgainAfterRollingBackToIt) {
  const ClaimResult claim = Claim("k");
  ASSERT_TRUE(tx_->Savepoint("idem_effect").ok());
  ASSERT_EQ(RowState("k"), "in_progress");  // written here, inside the savepoint
  ASSERT_TRUE(tx_->RollbackToSavepoint("idem_effect").ok());
  EXPECT_EQ(RowState("k"), "in_progress");  // the rollback took the row; it was written again
  ASSERT_TRUE(tx_->RollbackToSavepoint("idem_effect").ok());
  EXPECT_EQ(RowState("k"), "in_progress");
  ASSERT_TRUE(Finish("k", claim, KeyState::kFailedFinal).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kFailedFinal);
}

TEST_F(DeferredClaimsTest, TheEffectsOwnSavepointsInsideTheEffectSavepointAreFollowed) {
  const ClaimResult claim = Claim("k");
  ASSERT_TRUE(tx_->Savepoint("idem_effect").ok());
  ASSERT_TRUE(tx_->Execute("SAVEPOINT mine", {}).ok());
  ASSERT_EQ(RowState("k"), "in_progress");  // written inside both savepoints
  ASSERT_TRUE(tx_->Execute("ROLLBACK TO \"MINE\"", {}).ok());
  EXPECT_EQ(RowState("k"), "in_progress");
  ASSERT_TRUE(tx_->Execute("RELEASE mine", {}).ok());
  ASSERT_TRUE(tx_->RollbackToSavepoint("idem_effect").ok());
  EXPECT_EQ(RowState("k"), "in_progress");
  ASSERT_TRUE(Finish("k", claim, KeyState::kFailedFinal).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kFailedFinal);
}

TEST_F(DeferredClaimsTest, ACallersOwnSavepointAroundNoClaimKeepsTheClaimMadeBeforeIt) {
  const ClaimResult claim = Claim("k");
  ASSERT_TRUE(tx_->Execute("SAVEPOINT mine", {}).ok());
  ASSERT_TRUE(tx_->Execute("ROLLBACK TO mine", {}).ok());
  ASSERT_TRUE(Finish("k", claim).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kCompleted);
}

// A batch: the call's savepoint around claim and effect savepoint; undoing the call forgets its
// claim even after it was written, and the key can be claimed again in the same transaction.
TEST_F(DeferredClaimsTest, RollingBackTheCallSavepointForgetsAClaimWrittenInsideTheEffect) {
  ASSERT_TRUE(tx_->Savepoint("idem_call").ok());
  const ClaimResult first = Claim("k");
  ASSERT_TRUE(tx_->Savepoint("idem_effect").ok());
  ASSERT_EQ(RowState("k"), "in_progress");
  ASSERT_TRUE(tx_->RollbackToSavepoint("idem_call").ok());
  ASSERT_TRUE(tx_->ReleaseSavepoint("idem_call").ok());
  EXPECT_EQ(RowState("k"), "");
  EXPECT_EQ(CodeOf(Finish("k", first)), StatusCode::kAborted);
  const ClaimResult second = Claim("k");
  ASSERT_TRUE(second.claimed);
  EXPECT_GT(second.record.fence, first.record.fence);
  ASSERT_TRUE(Finish("k", second).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kCompleted);
}

// A claim finished (its record inserted) inside a savepoint, then written-mode, then the finish
// rolled back: the claim is in_progress again, as a row.
TEST_F(DeferredClaimsTest, AFinishRolledBackAfterTheClaimsWereWrittenLeavesAnInProgressRow) {
  const ClaimResult claim = Claim("k");
  ASSERT_TRUE(tx_->Savepoint("s").ok());
  ASSERT_TRUE(Finish("k", claim).ok());
  ASSERT_EQ(RowState("k"), "completed");
  ASSERT_TRUE(tx_->RollbackToSavepoint("s").ok());
  EXPECT_EQ(RowState("k"), "in_progress");
  ASSERT_TRUE(Finish("k", claim, KeyState::kFailedFinal).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kFailedFinal);
}

TEST_F(DeferredClaimsTest, TheNativeHandleSeesTheClaimAsARow) {
  const ClaimResult claim = Claim("k");
  auto* db = static_cast<sqlite3*>(tx_->native_handle());
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT fence FROM idem_keys WHERE key = 'k'", -1, &stmt,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(stmt, 0), claim.record.fence);
  sqlite3_finalize(stmt);
  ASSERT_TRUE(Finish("k", claim).ok());
  ASSERT_TRUE(tx_->Commit().ok());
  EXPECT_EQ(CommittedState("k"), KeyState::kCompleted);
}

TEST_F(DeferredClaimsTest, ACommittedUnfinishedClaimIsAnInProgressRecord) {
  const ClaimResult claim = Claim("k");
  ASSERT_TRUE(tx_->Commit().ok());
  auto got = store_->Get(MakeScope("k"));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, claim.record);
}

// What the deferral saves, seen on the connection itself: no row until Finish, then one INSERT.
TEST(TransactionClaims, AClaimIsWrittenOnceFinishedAndNoRowBefore) {
  std::string dir = ::testing::TempDir() + "idem-claims-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  ASSERT_TRUE(OpenSqliteStore(dir + "/idem.db", "", StoreOptions{}).ok());  // the schema
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/idem.db").c_str(), &db), SQLITE_OK);
  {
    std::unique_ptr<sqlite::Connection> conn = sqlite::Connection::Borrow(db);
    ASSERT_TRUE(conn->Exec("BEGIN IMMEDIATE").ok());
    sqlite::TransactionClaims claims(/*defer=*/true);
    const Scope scope = MakeScope("k");
    const sqlite::ClaimParams params{scope, kFingerprint, "w", 1000, 2000, 3000};
    const int64_t changes_before = sqlite3_total_changes64(db);
    auto claim = claims.ClaimNewKey(*conn, params);
    ASSERT_TRUE(claim.ok() && claim->has_value() && (*claim)->claimed) << claim.status();
    EXPECT_EQ(sqlite3_total_changes64(db), changes_before);
    EXPECT_EQ(*conn->QueryInt("SELECT count(*) FROM idem_keys"), 0);
    auto finished = claims.Finish(*conn, scope, (*claim)->record.fence, KeyState::kCompleted,
                                  StoredResponse{.status = 201}, 1500, 9000);
    ASSERT_TRUE(finished.ok() && finished->has_value()) << finished.status();
    EXPECT_EQ(**finished, 1);
    EXPECT_EQ(sqlite3_total_changes64(db), changes_before + 1);
    ASSERT_TRUE(claims.BeforeCommit(*conn).ok());
    EXPECT_EQ(sqlite3_total_changes64(db), changes_before + 1);  // no counter write
    ASSERT_TRUE(conn->Exec("COMMIT").ok());
  }
  sqlite3_close(db);
}

TEST(TransactionClaims, NamesKeyTablesFindsTheKeyAndFenceTablesInAnyCase) {
  for (std::string_view sql : {"SELECT * FROM idem_keys", "update IDEM_FENCE set last = 1",
                               "SELECT 1 FROM x, \"Idem_Keys\""}) {
    EXPECT_TRUE(sqlite::TransactionClaims::NamesKeyTables(sql)) << sql;
  }
  for (std::string_view sql : {"SELECT * FROM idem_outbox", "INSERT INTO orders VALUES (1)",
                               "SELECT 'idem_'", "idem_"}) {
    EXPECT_FALSE(sqlite::TransactionClaims::NamesKeyTables(sql)) << sql;
  }
}

}  // namespace
}  // namespace idem
