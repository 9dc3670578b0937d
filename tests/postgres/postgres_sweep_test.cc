// The sweeper against a claim on PostgreSQL, played deterministically: the claim holds the row
// lock of a record it turned live again while the sweeper's DELETE comes for it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include "idem/store.h"
#include "pg_test_support.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

class PostgresSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    schema_ = fresh->schema;
    StoreOptions options;
    options.clock = &clock_;
    options.retention = 1h;
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh->uri, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Returns once a DELETE on idem_keys waits for a lock, or `sweep` has finished.
  void WaitUntilSweeperBlockedOrDone(std::future<absl::StatusOr<int64_t>>& sweep) {
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (sweep.wait_for(0s) == std::future_status::ready) return;
      absl::StatusOr<std::vector<std::vector<std::string>>> rows = pgtest::AdminQuery(
          schema_,
          "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE "
          "'DELETE FROM idem_keys%'");
      ASSERT_TRUE(rows.ok()) << rows.status();
      if ((*rows)[0][0] != "0") return;
    }
    FAIL() << "the sweeper neither finished nor waited for the claim's lock";
  }

  ManualClock clock_;
  std::string schema_;
  std::unique_ptr<Store> store_;
};

TEST_F(PostgresSweep, SweeperNeverDeletesAClaimThatTurnedAnExpiredRecordLive) {
  const Scope scope{"tenant", "key-1"};
  ClaimRequest request{scope, std::string(64, 'a'), "first", 30s};
  absl::StatusOr<ClaimResult> first = store_->Claim(request);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(store_->Complete(scope, first->record.fence, {201, {}, "one"}).ok());
  clock_.Advance(2h);
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store_->Begin();
  ASSERT_TRUE(tx.ok()) << tx.status();
  absl::StatusOr<ClaimResult> claim = (*tx)->Claim(scope, std::string(64, 'a'), "second");
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_TRUE(claim->claimed);
  std::future<absl::StatusOr<int64_t>> sweep =
      std::async(std::launch::async, [this] { return store_->SweepExpired(100); });
  WaitUntilSweeperBlockedOrDone(sweep);
  ASSERT_TRUE(
      (*tx)->Finish(scope, claim->record.fence, KeyState::kCompleted, {200, {}, "two"}).ok());
  ASSERT_TRUE((*tx)->Commit().ok());
  absl::StatusOr<int64_t> swept = sweep.get();
  ASSERT_TRUE(swept.ok()) << swept.status();
  EXPECT_EQ(*swept, 0);
  absl::StatusOr<KeyRecord> got = store_->Get(scope);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->owner, "second");
  EXPECT_EQ(got->response.body, "two");
}

}  // namespace
}  // namespace idem
