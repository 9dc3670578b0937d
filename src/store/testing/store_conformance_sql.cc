// The conformance suite, the caller's SQL on a StoreTransaction (idem/transaction.h): $N
// parameters, typed values, rows changed, and the error codes. The SQL is valid on every backend.
#include "store/testing/conformance_helpers.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {
namespace {

using absl::StatusCode;

constexpr char kCreateValues[] =
    "CREATE TABLE IF NOT EXISTS conformance_values (id BIGINT PRIMARY KEY, t TEXT, b BYTEA, "
    "d DOUBLE PRECISION, n BIGINT)";

// Opens a transaction with an empty conformance_values table.
absl::StatusOr<std::unique_ptr<StoreTransaction>> BeginWithValuesTable(Store& store) {
  {
    absl::StatusOr<std::unique_ptr<StoreTransaction>> setup = store.Begin();
    if (!setup.ok()) return setup.status();
    absl::Status status = (*setup)->Execute(kCreateValues).status();
    if (status.ok()) status = (*setup)->Execute("DELETE FROM conformance_values").status();
    if (status.ok()) status = (*setup)->Commit();
    if (!status.ok()) return status;
  }
  return store.Begin();
}

TEST_P(StoreConformanceTest, QueryReturnsEachColumnAsItsType) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, BeginWithValuesTable(*store_));
  const std::string bytes("a\0b\xff", 4);
  const SqlValue params[] = {int64_t{7}, std::string("text 'quoted'"), Blob{bytes}, 2.5,
                             std::monostate()};
  IDEM_ASSERT_OK_AND_ASSIGN(
      int64_t inserted,
      tx->Execute("INSERT INTO conformance_values (id, t, b, d, n) VALUES ($1, $2, $3, $4, $5)",
                  params));
  EXPECT_EQ(inserted, 1);
  const SqlValue key[] = {int64_t{7}};
  IDEM_ASSERT_OK_AND_ASSIGN(
      std::vector<SqlRow> rows,
      tx->Query("SELECT id, t, b, d, n FROM conformance_values WHERE id = $1", key));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (SqlRow{int64_t{7}, std::string("text 'quoted'"), Blob{bytes}, 2.5,
                             std::monostate()}));
  IDEM_ASSERT_OK(tx->Rollback());
}

TEST_P(StoreConformanceTest, ParametersCanRepeatAndComeInAnyOrder) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, BeginWithValuesTable(*store_));
  const SqlValue params[] = {std::string("same"), int64_t{3}};
  IDEM_ASSERT_OK(
      tx->Execute("INSERT INTO conformance_values (id, t, n) VALUES ($2, $1, $2)", params)
          .status());
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows,
                            tx->Query("SELECT t, n FROM conformance_values"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (SqlRow{std::string("same"), int64_t{3}}));
}

TEST_P(StoreConformanceTest, ExecuteReturnsTheRowsChanged) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, BeginWithValuesTable(*store_));
  for (int64_t id = 1; id <= 3; ++id) {
    const SqlValue params[] = {id};
    IDEM_ASSERT_OK(
        tx->Execute("INSERT INTO conformance_values (id, n) VALUES ($1, 0)", params).status());
  }
  const SqlValue limit[] = {int64_t{2}};
  IDEM_ASSERT_OK_AND_ASSIGN(
      int64_t updated, tx->Execute("UPDATE conformance_values SET n = 1 WHERE id <= $1", limit));
  EXPECT_EQ(updated, 2);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t none,
                            tx->Execute("UPDATE conformance_values SET n = 1 WHERE id > 99"));
  EXPECT_EQ(none, 0);
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t selected, tx->Execute("SELECT id FROM conformance_values"));
  EXPECT_EQ(selected, 0);
}

TEST_P(StoreConformanceTest, QueryWithReturningGivesTheRows) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, BeginWithValuesTable(*store_));
  const SqlValue params[] = {int64_t{11}, int64_t{40}};
  IDEM_ASSERT_OK_AND_ASSIGN(
      std::vector<SqlRow> rows,
      tx->Query("INSERT INTO conformance_values (id, n) VALUES ($1, $2) RETURNING n + 2",
                params));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], (SqlRow{int64_t{42}}));
}

TEST_P(StoreConformanceTest, UniqueViolationIsAlreadyExists) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, BeginWithValuesTable(*store_));
  const SqlValue params[] = {int64_t{1}};
  IDEM_ASSERT_OK(tx->Execute("INSERT INTO conformance_values (id) VALUES ($1)", params).status());
  EXPECT_EQ(CodeOf(tx->Execute("INSERT INTO conformance_values (id) VALUES ($1)", params)),
            StatusCode::kAlreadyExists);
  IDEM_ASSERT_OK(tx->Rollback());
}

TEST_P(StoreConformanceTest, SqlTheDatabaseRejectsIsInvalidArgument) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  EXPECT_EQ(CodeOf(tx->Query("SELEC 1")), StatusCode::kInvalidArgument);
  IDEM_ASSERT_OK(tx->Rollback());
  IDEM_ASSERT_OK_AND_ASSIGN(tx, store_->Begin());
  EXPECT_EQ(CodeOf(tx->Execute("INSERT INTO conformance_no_such_table (x) VALUES (1)")),
            StatusCode::kInvalidArgument);
  IDEM_ASSERT_OK(tx->Rollback());
}

TEST_P(StoreConformanceTest, SavepointRollbackRecoversFromAFailedStatement) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, BeginWithValuesTable(*store_));
  const SqlValue params[] = {int64_t{1}};
  IDEM_ASSERT_OK(tx->Execute("INSERT INTO conformance_values (id) VALUES ($1)", params).status());
  IDEM_ASSERT_OK(tx->Savepoint("attempt"));
  EXPECT_EQ(CodeOf(tx->Execute("INSERT INTO conformance_values (id) VALUES ($1)", params)),
            StatusCode::kAlreadyExists);
  IDEM_ASSERT_OK(tx->RollbackToSavepoint("attempt"));
  IDEM_ASSERT_OK_AND_ASSIGN(std::vector<SqlRow> rows,
                            tx->Query("SELECT count(*) FROM conformance_values"));
  EXPECT_EQ(rows, (std::vector<SqlRow>{{int64_t{1}}}));
  IDEM_ASSERT_OK(tx->Commit());
}

TEST_P(StoreConformanceTest, SavepointNameThatIsNotAnIdentifierIsInvalidArgument) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  EXPECT_EQ(CodeOf(tx->Savepoint("x; DROP TABLE idem_keys")), StatusCode::kInvalidArgument);
  EXPECT_EQ(CodeOf(tx->Savepoint("")), StatusCode::kInvalidArgument);
  IDEM_ASSERT_OK(tx->Rollback());
}

TEST_P(StoreConformanceTest, RollbackAfterCommitIsHarmless) {
  IDEM_ASSERT_OK_AND_ASSIGN(std::unique_ptr<StoreTransaction> tx, store_->Begin());
  IDEM_ASSERT_OK(tx->Claim(MakeScope("k1"), kFingerprint, "w").status());
  IDEM_ASSERT_OK(tx->Commit());
  IDEM_ASSERT_OK(tx->Rollback());
  IDEM_ASSERT_OK(store_->Get(MakeScope("k1")).status());
}

}  // namespace
}  // namespace idem::testing
