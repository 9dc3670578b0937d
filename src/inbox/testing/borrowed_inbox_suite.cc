// The inbox in a transaction the application opened on its own connection
// (idem/borrowed_transaction.h), on every store: the application begins, ConsumeOnce and its own
// writes go into that one transaction, and the application commits or rolls back.
#include "inbox/testing/borrowed_inbox_suite.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "idem/borrowed_transaction.h"
#include "idem/inbox.h"

namespace idem::testing {

using ::absl::StatusCode;
using ::testing::HasSubstr;

void BorrowedInboxTest::SetUp() {
  auto conn = GetParam().open_fresh(/*with_schema=*/true);
  ASSERT_TRUE(conn.ok()) << conn.status();
  conn_ = *std::move(conn);
  ASSERT_TRUE(conn_->Exec("CREATE TABLE totals (customer TEXT PRIMARY KEY, cents BIGINT)").ok());
}

absl::StatusOr<bool> BorrowedInboxTest::Consume(const std::string& id, int64_t cents, bool commit) {
  if (absl::Status begun = conn_->Exec("BEGIN"); !begun.ok()) return begun;
  absl::StatusOr<bool> first;
  {
    auto tx = conn_->Borrow({});
    if (!tx.ok()) return tx.status();
    first = ConsumeOnce(**tx, "payments", id);
  }
  if (first.ok() && *first) {
    absl::Status applied =
        conn_->Exec("INSERT INTO totals (customer, cents) VALUES ('c', " + std::to_string(cents) +
                    ") ON CONFLICT (customer) DO UPDATE SET cents = totals.cents + excluded.cents");
    if (!applied.ok()) return applied;
  }
  if (absl::Status ended = conn_->Exec(commit && first.ok() ? "COMMIT" : "ROLLBACK"); !ended.ok()) {
    return ended;
  }
  return first;
}

int64_t BorrowedInboxTest::Count(const std::string& table) {
  auto count = conn_->QueryInt("SELECT COUNT(*) FROM " + table);
  EXPECT_TRUE(count.ok()) << count.status();
  return count.value_or(-1);
}

int64_t BorrowedInboxTest::Total() {
  auto total = conn_->QueryInt("SELECT cents FROM totals WHERE customer = 'c'");
  EXPECT_TRUE(total.ok()) << total.status();
  return total.value_or(-1);
}

namespace {

TEST_P(BorrowedInboxTest, CallersCommitAppliesOnceAndRedeliveryIsSkipped) {
  EXPECT_EQ(Consume("m-1", 500).value_or(false), true);
  EXPECT_EQ(Consume("m-1", 500).value_or(true), false);
  EXPECT_EQ(Consume("m-1", 500).value_or(true), false);
  EXPECT_EQ(Consume("m-2", 7).value_or(false), true);
  EXPECT_EQ(Total(), 507);
  EXPECT_EQ(Count("idem_inbox"), 2);
}

TEST_P(BorrowedInboxTest, CallersRollbackLeavesNothingAndTheMessageIsAppliedWhenItComesAgain) {
  EXPECT_EQ(Consume("m-1", 500, /*commit=*/false).value_or(false), true);
  EXPECT_EQ(Count("idem_inbox"), 0);
  EXPECT_EQ(Total(), 0);
  EXPECT_EQ(Consume("m-1", 500).value_or(false), true);
  EXPECT_EQ(Total(), 500);
}

TEST_P(BorrowedInboxTest, NoOpenTransactionIsFailedPrecondition) {
  auto tx = conn_->Borrow({});
  EXPECT_EQ(tx.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(tx.status().message(), HasSubstr("BEGIN"));
}

// A transaction its owner ended is the caller's misuse, not a reused key: Internal, as a store
// transaction ended outside the store (it was FailedPrecondition, the key-reused code).
TEST_P(BorrowedInboxTest, CallsAfterTheCallerEndedItsTransactionAreInternal) {
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  auto tx = conn_->Borrow({});
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  EXPECT_EQ(ConsumeOnce(**tx, "payments", "m-1").status().code(), StatusCode::kInternal);
  EXPECT_EQ((*tx)->Doomed().code(), StatusCode::kInternal);
  EXPECT_EQ(Count("idem_inbox"), 0);  // not run outside a transaction
}

TEST_P(BorrowedInboxTest, CommitAndRollbackAreLeftToTheCaller) {
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  {
    auto tx = conn_->Borrow({});
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_EQ(ConsumeOnce(**tx, "payments", "m-1").value_or(false), true);
    EXPECT_EQ((*tx)->Commit().code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ((*tx)->Rollback().code(), StatusCode::kFailedPrecondition);
  }
  // Destroying it left the caller's transaction open with the record in it, and Commit()
  // committed nothing: the caller's ROLLBACK takes the record away.
  EXPECT_EQ(Count("idem_inbox"), 1);
  ASSERT_TRUE(conn_->Exec("ROLLBACK").ok());
  EXPECT_EQ(Count("idem_inbox"), 0);
}

TEST_P(BorrowedInboxTest, UniqueViolationIsAlreadyExistsAndTheTransactionIsGoodOnlyForRollback) {
  ASSERT_TRUE(conn_->Exec("CREATE TABLE seen (id TEXT PRIMARY KEY)").ok());
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  {
    auto tx = conn_->Borrow({});
    ASSERT_TRUE(tx.ok()) << tx.status();
    const SqlValue id[] = {std::string("a")};
    ASSERT_EQ((*tx)->Execute("INSERT INTO seen (id) VALUES ($1)", id).value_or(0), 1);
    EXPECT_EQ((*tx)->Execute("INSERT INTO seen (id) VALUES ($1)", id).status().code(),
              StatusCode::kAlreadyExists);
    EXPECT_EQ(ConsumeOnce(**tx, "payments", "m-1").status().code(), StatusCode::kInternal);
  }
  ASSERT_TRUE(conn_->Exec("ROLLBACK").ok());
  EXPECT_EQ(Count("seen"), 0);
}

// A setup error, not a reused key: NotFound (it was FailedPrecondition, the key-reused code).
TEST_P(BorrowedInboxWithoutSchemaTest, MissingSchemaIsNotFoundNamingOpenStore) {
  auto conn = GetParam().open_fresh(/*with_schema=*/false);
  ASSERT_TRUE(conn.ok()) << conn.status();
  ASSERT_TRUE((*conn)->Exec("BEGIN").ok());
  {
    auto tx = (*conn)->Borrow({});
    ASSERT_TRUE(tx.ok()) << tx.status();
    absl::StatusOr<bool> first = ConsumeOnce(**tx, "payments", "m-1");
    EXPECT_EQ(first.status().code(), StatusCode::kNotFound);
    EXPECT_THAT(first.status().message(), HasSubstr("idem_inbox"));
    EXPECT_THAT(first.status().message(), HasSubstr("OpenStore"));
  }
  EXPECT_TRUE((*conn)->Exec("ROLLBACK").ok());
}

}  // namespace
}  // namespace idem::testing
