// The outcome of a key the store's own transaction claimed goes out with COMMIT, in the same
// round trip (postgres_transaction.h), and is still checked: whatever changed the claimed row
// inside the transaction, an outcome that records nothing never lets the transaction commit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "idem/store.h"
#include "pg_test_support.h"

namespace idem {
namespace {

using Rows = std::vector<std::vector<std::string>>;

#define IDEM_PG_ASSERT_OK(expr)     \
  do {                              \
    const absl::Status s_ = (expr); \
    ASSERT_TRUE(s_.ok()) << s_;     \
  } while (false)

class PostgresDeferredOutcome : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    schema_ = fresh->schema;
    StoreOptions options;
    options.clock = &clock_;
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh->uri, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    Admin("CREATE TABLE effects (k text PRIMARY KEY, v bigint)");
    absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store_->Begin();
    ASSERT_TRUE(tx.ok()) << tx.status();
    tx_ = *std::move(tx);
  }

  Rows Admin(std::string_view sql) {
    absl::StatusOr<Rows> rows = pgtest::AdminQuery(schema_, sql);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : Rows{};
  }

  int64_t Claim() {
    absl::StatusOr<ClaimResult> claim = tx_->Claim(scope_, std::string(64, 'f'), "worker");
    EXPECT_TRUE(claim.ok()) << claim.status();
    EXPECT_TRUE(claim.ok() && claim->claimed);
    return claim.ok() ? claim->record.fence : 0;
  }

  absl::Status Finish(int64_t fence) {
    return tx_->Finish(scope_, fence, KeyState::kCompleted, StoredResponse{201, {}, "made"});
  }

  const Scope scope_{"tenant", "deferred"};
  ManualClock clock_;
  std::string schema_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<StoreTransaction> tx_;
};

TEST_F(PostgresDeferredOutcome, OutcomeOfAKeyClaimedHereGoesOutWithTheCommit) {
  absl::StatusOr<std::vector<SqlRow>> pid = tx_->Query("SELECT pg_backend_pid()");
  ASSERT_TRUE(pid.ok()) << pid.status();
  const int64_t fence = Claim();
  const std::string effect = "INSERT INTO effects (k, v) VALUES ('a', 1)";
  IDEM_PG_ASSERT_OK(tx_->Execute(effect).status());
  IDEM_PG_ASSERT_OK(Finish(fence));
  // The server has not seen the outcome yet: the backend's last statement is the effect.
  EXPECT_EQ(Admin(fmt::format("SELECT query FROM pg_stat_activity WHERE pid = {}",
                              std::get<int64_t>((*pid)[0][0]))),
            Rows{{effect}});
  IDEM_PG_ASSERT_OK(tx_->Commit());
  absl::StatusOr<KeyRecord> record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kCompleted);
  EXPECT_EQ(record->response.status, 201);
  EXPECT_EQ(record->response.body, "made");
  EXPECT_EQ(Admin("SELECT count(*) FROM effects"), Rows{{"1"}});
}

// SQL that names no idem_ table can still change the claimed row (here through a view): the
// outcome, sent with COMMIT, changes nothing, and the server skips the COMMIT behind it.
TEST_F(PostgresDeferredOutcome, OutcomeThatChangesNothingStopsTheCommit) {
  Admin("CREATE VIEW claims_seen AS SELECT * FROM idem_keys");
  const int64_t fence = Claim();
  ASSERT_EQ(tx_->Execute("UPDATE claims_seen SET fence = fence + 1000").value_or(-1), 1);
  IDEM_PG_ASSERT_OK(tx_->Execute("INSERT INTO effects (k, v) VALUES ('a', 1)").status());
  IDEM_PG_ASSERT_OK(Finish(fence));
  const absl::Status committed = tx_->Commit();
  EXPECT_EQ(committed.code(), absl::StatusCode::kAborted) << committed;
  EXPECT_NE(committed.message().find("outcome was not recorded"), absl::string_view::npos)
      << committed;
  EXPECT_EQ(store_->Get(scope_).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(Admin("SELECT count(*) FROM effects"), Rows{{"0"}});
}

// The caller's own rollback to a savepoint taken before the claim undoes the claim: Finish says
// so at once, as it does for any lost claim.
TEST_F(PostgresDeferredOutcome, ClaimUndoneByTheCallersRollbackIsReportedByFinish) {
  IDEM_PG_ASSERT_OK(tx_->Execute("SAVEPOINT mine").status());
  const int64_t fence = Claim();
  IDEM_PG_ASSERT_OK(tx_->Execute("ROLLBACK TO SAVEPOINT mine").status());
  EXPECT_EQ(Finish(fence).code(), absl::StatusCode::kAborted);
}

// SQL naming idem_keys may change the row: its outcome is checked at Finish, not at COMMIT.
TEST_F(PostgresDeferredOutcome, RowChangedBySqlNamingTheKeyTableIsReportedByFinish) {
  const int64_t fence = Claim();
  ASSERT_EQ(tx_->Execute("UPDATE IDEM_KEYS SET state = 2").value_or(-1), 1);
  EXPECT_EQ(Finish(fence).code(), absl::StatusCode::kAborted);
}

// A record that expired while the effect ran is no longer held: Finish says so at once.
TEST_F(PostgresDeferredOutcome, ClaimExpiredBeforeFinishIsReportedByFinish) {
  const int64_t fence = Claim();
  clock_.Advance(std::chrono::hours(24 * 365));
  EXPECT_EQ(Finish(fence).code(), absl::StatusCode::kAborted);
}

// A second outcome of the same key is refused at once, the first one going out before it.
TEST_F(PostgresDeferredOutcome, SecondOutcomeOfTheKeyIsRefusedByFinish) {
  const int64_t fence = Claim();
  IDEM_PG_ASSERT_OK(Finish(fence));
  EXPECT_EQ(Finish(fence).code(), absl::StatusCode::kAborted);
}

}  // namespace
}  // namespace idem
