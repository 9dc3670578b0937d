// RunOnceIn on a borrowed transaction beside the application's own savepoints and its own
// statements on its raw connection, on every store: every savepoint statement of the guard runs
// before control returns to the effect or the caller (none is left queued to go out with a later
// statement), an effect may roll back to a savepoint of its own after a failed statement, and a
// nested call of the key the transaction already holds is refused.
#include <memory>
#include <string>

#include "guard/testing/borrowed_guard_suite.h"
#include "idem/borrowed_transaction.h"

namespace idem::testing {
namespace {

using ::absl::StatusCode;

// An effect that writes the row `id` into `effects` through its Transaction and answers `status`.
Effect WriteThroughTx(std::string id, int status) {
  return [id = std::move(id), status](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    const SqlValue params[] = {id};
    auto written = tx.Execute("INSERT INTO effects (id) VALUES ($1)", params);
    if (!written.ok()) return written.status();
    return StoredResponse{.status = status, .body = "effect " + id};
  };
}

// On PostgreSQL the guard's SAVEPOINT before the effect was only queued, so an effect's write
// made with PQexec on the application's connection reached the server first and the failed_final
// outcome's ROLLBACK TO missed it: the row committed under a stored 422.
TEST_P(BorrowedGuardTest, FailedFinalUndoesWritesTheEffectMadeOnTheCallersOwnConnection) {
  ASSERT_TRUE(conn_->Exec(conn_->begin_sql()).ok());
  {
    auto tx = conn_->Borrow({.clock = &clock_});
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto result =
        RunOnceIn(**tx, scope_, "fp", [&](Transaction&) -> absl::StatusOr<StoredResponse> {
          ++effect_runs_;
          if (absl::Status raw = conn_->Exec("INSERT INTO effects (id) VALUES ('raw')");
              !raw.ok()) {
            return raw;
          }
          return StoredResponse{.status = 422, .body = "refused"};
        });
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->state, KeyState::kFailedFinal);
    EXPECT_TRUE((*tx)->Doomed().ok()) << (*tx)->Doomed();
  }
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  EXPECT_EQ(effect_runs_.load(), 1);
  EXPECT_EQ(Count("effects"), 0);
  EXPECT_EQ(Count("idem_keys"), 1);
}

// On PostgreSQL the guard's RELEASE SAVEPOINT "idem_call" was queued past the call's return and
// went out with the next call's first statement, after the caller had released its own savepoint
// around the first item (and idem_call with it): "savepoint does not exist", transaction aborted.
TEST_P(BorrowedGuardTest, EachItemInASavepointOfTheCallersRunsTheGuardInTurn) {
  ASSERT_TRUE(conn_->Exec(conn_->begin_sql()).ok());
  {
    auto tx = conn_->Borrow({.clock = &clock_});
    ASSERT_TRUE(tx.ok()) << tx.status();
    for (const std::string item : {"k1", "k2"}) {
      ASSERT_TRUE(conn_->Exec("SAVEPOINT item").ok());
      auto result = RunOnceIn(**tx, {"tenant-a", item}, "fp", WriteThroughTx(item, 201));
      ASSERT_TRUE(result.ok()) << item << ": " << result.status();
      EXPECT_EQ(result->state, KeyState::kCompleted);
      ASSERT_TRUE(conn_->Exec("RELEASE SAVEPOINT item").ok());
    }
    EXPECT_TRUE((*tx)->Doomed().ok()) << (*tx)->Doomed();
  }
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  EXPECT_EQ(Count("effects"), 2);
  EXPECT_EQ(Count("idem_keys"), 2);
}

// On PostgreSQL the first call's late RELEASE SAVEPOINT "idem_call" went out with the second
// call, after the caller's inner "sp", and released it: the caller's ROLLBACK TO sp then went to
// its outer "sp" and took the first call's completed effect and key record away.
TEST_P(BorrowedGuardTest, ACallersSavepointTakenAfterACallIsLeftAsTheCallerMadeIt) {
  ASSERT_TRUE(conn_->Exec(conn_->begin_sql()).ok());
  {
    auto tx = conn_->Borrow({.clock = &clock_});
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_TRUE(conn_->Exec("SAVEPOINT sp").ok());
    auto first = RunOnceIn(**tx, {"tenant-a", "a"}, "fp", WriteThroughTx("a", 201));
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->state, KeyState::kCompleted);
    ASSERT_TRUE(conn_->Exec("SAVEPOINT sp").ok());
    auto second = RunOnceIn(**tx, {"tenant-a", "b"}, "fp", WriteThroughTx("b", 201));
    ASSERT_TRUE(second.ok()) << second.status();
    ASSERT_TRUE(conn_->Exec("ROLLBACK TO SAVEPOINT sp").ok());  // undoes the second call only
    EXPECT_TRUE((*tx)->Doomed().ok()) << (*tx)->Doomed();
  }
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  EXPECT_EQ(conn_->QueryInt("SELECT COUNT(*) FROM effects WHERE id = 'a'").value_or(-1), 1);
  EXPECT_EQ(conn_->QueryInt("SELECT COUNT(*) FROM effects WHERE id = 'b'").value_or(-1), 0);
  EXPECT_EQ(conn_->QueryInt("SELECT COUNT(*) FROM idem_keys WHERE key = 'a'").value_or(-1), 1);
  EXPECT_EQ(conn_->QueryInt("SELECT COUNT(*) FROM idem_keys WHERE key = 'b'").value_or(-1), 0);
}

// SQLite refused the effect's ROLLBACK TO its own savepoint after a failed statement ("an earlier
// statement of this transaction failed"), so the effect could not recover and the call failed
// Internal; PostgreSQL allowed it.
TEST_P(BorrowedGuardTest, AnEffectRollsBackToItsOwnSavepointAfterAFailedStatementAndCompletes) {
  ASSERT_TRUE(conn_->Exec("INSERT INTO effects (id) VALUES ('taken')").ok());
  ASSERT_TRUE(conn_->Exec(conn_->begin_sql()).ok());
  {
    auto tx = conn_->Borrow({.clock = &clock_});
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto result =
        RunOnceIn(**tx, scope_, "fp", [&](Transaction& t) -> absl::StatusOr<StoredResponse> {
          ++effect_runs_;
          if (auto saved = t.Execute("SAVEPOINT mine"); !saved.ok()) return saved.status();
          auto taken = t.Execute("INSERT INTO effects (id) VALUES ('taken')");
          if (taken.status().code() != StatusCode::kAlreadyExists) {
            return absl::InternalError("expected AlreadyExists, got " + taken.status().ToString());
          }
          if (auto undone = t.Execute("ROLLBACK TO SAVEPOINT mine"); !undone.ok()) {
            return undone.status();
          }
          if (auto released = t.Execute("RELEASE SAVEPOINT mine"); !released.ok()) {
            return released.status();
          }
          return WriteThroughTx("other", 201)(t);
        });
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->state, KeyState::kCompleted);
  }
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  EXPECT_EQ(Count("effects"), 2);
  EXPECT_EQ(Count("idem_keys"), 1);
}

// An effect whose statement on the application's connection failed (on PostgreSQL the server
// then aborts the transaction) and that returns the failure: the guard rolls back to its own
// savepoint, which makes the transaction usable again, and the caller's own write commits.
TEST_P(BorrowedGuardTest, AnEffectsFailedStatementOnTheCallersConnectionIsUndoneWithTheCall) {
  ASSERT_TRUE(conn_->Exec("INSERT INTO effects (id) VALUES ('taken')").ok());
  ASSERT_TRUE(conn_->Exec(conn_->begin_sql()).ok());
  ASSERT_TRUE(conn_->Exec("INSERT INTO orders (id) VALUES ('o-1')").ok());
  {
    auto tx = conn_->Borrow({.clock = &clock_});
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto result =
        RunOnceIn(**tx, scope_, "fp", [&](Transaction&) -> absl::StatusOr<StoredResponse> {
          ++effect_runs_;
          if (absl::Status raw = conn_->Exec("INSERT INTO effects (id) VALUES ('taken')");
              !raw.ok()) {
            return absl::AlreadyExistsError(raw.message());
          }
          return StoredResponse{.status = 201};
        });
    EXPECT_EQ(result.status().code(), StatusCode::kAlreadyExists) << result.status();
    EXPECT_TRUE((*tx)->Doomed().ok()) << (*tx)->Doomed();
  }
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  EXPECT_EQ(Count("orders"), 1);
  EXPECT_EQ(Count("effects"), 1);
  EXPECT_EQ(Count("idem_keys"), 0);
}

// SQLite's inner call took the outer call's claim over (its lease ended at once), ran the effect
// a second time, and the outer call then failed Aborted; PostgreSQL refused the inner call at
// once. Both refuse it now: Aborted, the effect not run, and the outer call completes.
TEST_P(BorrowedGuardTest, ANestedCallOfTheKeyTheTransactionHoldsIsAbortedAndTheOuterCompletes) {
  ASSERT_TRUE(conn_->Exec(conn_->begin_sql()).ok());
  absl::StatusOr<GuardResult> inner = absl::UnknownError("not run");
  {
    auto tx = conn_->Borrow({.clock = &clock_});
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto outer =
        RunOnceIn(**tx, scope_, "fp", [&](Transaction& t) -> absl::StatusOr<StoredResponse> {
          ++effect_runs_;
          inner = RunOnceIn(**tx, scope_, "fp", [&](Transaction& u) {
            ++effect_runs_;
            return WriteThroughTx("inner", 201)(u);
          });
          return WriteThroughTx("outer", 201)(t);
        });
    ASSERT_TRUE(outer.ok()) << outer.status();
    EXPECT_EQ(outer->state, KeyState::kCompleted);
  }
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  EXPECT_EQ(inner.status().code(), StatusCode::kAborted) << inner.status();
  EXPECT_EQ(effect_runs_.load(), 1);
  EXPECT_EQ(conn_->QueryInt("SELECT COUNT(*) FROM effects WHERE id = 'outer'").value_or(-1), 1);
  EXPECT_EQ(Count("effects"), 1);
  EXPECT_EQ(Count("idem_keys"), 1);
}

// FailedPrecondition means a reused key and nothing else: a call on a transaction the caller
// already ended is Internal (the caller broke the borrowing rule), one on a database that lacks
// idem's tables NotFound (a setup error). Neither runs the effect.
TEST_P(BorrowedGuardTest, ACallAfterTheCallerEndedItsTransactionIsInternalNotFailedPrecondition) {
  ASSERT_TRUE(conn_->Exec(conn_->begin_sql()).ok());
  auto tx = conn_->Borrow({.clock = &clock_});
  ASSERT_TRUE(tx.ok()) << tx.status();
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  auto result = RunOnceIn(**tx, scope_, "fp", WriteThroughTx("late", 201));
  EXPECT_EQ(result.status().code(), StatusCode::kInternal) << result.status();
  EXPECT_EQ((*tx)->Doomed().code(), StatusCode::kInternal);
  EXPECT_EQ(Count("effects"), 0);
  EXPECT_EQ(Count("idem_keys"), 0);
}

TEST_P(BorrowedGuardTest, ACallOnADatabaseWithoutIdemsTablesIsNotFoundNotFailedPrecondition) {
  auto bare = GetParam().open_fresh(/*with_schema=*/false);
  ASSERT_TRUE(bare.ok()) << bare.status();
  ASSERT_TRUE((*bare)->Exec("CREATE TABLE effects (id TEXT PRIMARY KEY)").ok());
  ASSERT_TRUE((*bare)->Exec((*bare)->begin_sql()).ok());
  {
    auto tx = (*bare)->Borrow({.clock = &clock_});
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto result = RunOnceIn(**tx, scope_, "fp", [&](Transaction& t) {
      ++effect_runs_;
      return WriteThroughTx("x", 201)(t);
    });
    EXPECT_EQ(result.status().code(), StatusCode::kNotFound) << result.status();
  }
  ASSERT_TRUE((*bare)->Exec("ROLLBACK").ok());
  EXPECT_EQ(effect_runs_.load(), 0);
}

}  // namespace
}  // namespace idem::testing
