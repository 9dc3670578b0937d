// Lease mode in SQL (idem.acquire / heartbeat / complete / release, docs/sql.md): decisions,
// takeover of a lapsed lease with a larger fence, stale fences refused with SQLSTATE IDEM1 and
// nothing changed, and fences shared with the C++ store's lease mode on the same records.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "idem/store.h"
#include "sql_functions_fixture.h"

namespace idem::pgtest {
namespace {

constexpr const char* kAcquire =
    "SELECT decision, fence, status, convert_from(body, 'UTF8') FROM idem.acquire($1, $2, "
    "$3::interval)";

using SqlLeaseTest = SqlFunctionsFixture;

int64_t Fence(const SqlAnswer& a) { return std::atoll(a.At(0, 1).c_str()); }

TEST_F(SqlLeaseTest, AcquireRunsOnceThenReportsInProgressMismatchAndReplay) {
  SqlAnswer run = conn_->Exec(kAcquire, {"pay-1", "fp", "1 minute"});
  ASSERT_TRUE(run.ok()) << run.message;
  ASSERT_EQ(run.At(0, 0), "run");
  const int64_t fence = Fence(run);
  EXPECT_GT(fence, 0);

  EXPECT_EQ(conn_->Exec(kAcquire, {"pay-1", "fp", "1 minute"}).At(0, 0), "in_progress");
  EXPECT_EQ(conn_->Exec(kAcquire, {"pay-1", "fp-other", "1 minute"}).At(0, 0), "mismatch");
  EXPECT_EQ(conn_->Exec("SELECT decision FROM idem.begin('pay-1', 'fp')").At(0, 0),
            "in_progress");  // held in lease mode: a transaction does not wait for it
  EXPECT_TRUE(conn_->Exec("SELECT idem.heartbeat('pay-1', $1::bigint, '2 minutes')",
                          {std::to_string(fence)})
                  .ok());
  const std::string complete = "SELECT idem.complete('pay-1', $1::bigint, 200, "
                               "'{\"Content-Type\": \"text/plain\"}', convert_to('paid', 'UTF8'))";
  ASSERT_TRUE(conn_->Exec(complete, {std::to_string(fence)}).ok());
  // A retry of a complete whose acknowledgement was lost finds its own outcome.
  EXPECT_TRUE(conn_->Exec(complete, {std::to_string(fence)}).ok());

  SqlAnswer replay = conn_->Exec(kAcquire, {"pay-1", "fp", "1 minute"});
  EXPECT_EQ(replay.At(0, 0), "replay");
  EXPECT_EQ(replay.At(0, 1), "<null>");
  EXPECT_EQ(replay.At(0, 2), "200");
  EXPECT_EQ(replay.At(0, 3), "paid");
}

// A holder whose lease lapsed loses the key to the next acquire of the same request, which gets
// a larger fence; every write of the old fence then raises IDEM1 and changes nothing.
TEST_F(SqlLeaseTest, ALapsedLeaseIsTakenOverAndTheOldFenceIsRefusedWithIdem1) {
  SqlAnswer first = conn_->Exec(kAcquire, {"pay-2", "fp", "1 millisecond"});
  ASSERT_EQ(first.At(0, 0), "run") << first.message;
  const int64_t old_fence = Fence(first);
  SqlAnswer second;
  ASSERT_TRUE(Eventually([&] {  // until the 1 ms lease has passed by the server's clock
    second = conn_->Exec(kAcquire, {"pay-2", "fp", "1 minute"});
    return second.At(0, 0) != "in_progress";
  }));
  ASSERT_EQ(second.At(0, 0), "run") << second.message;
  const int64_t new_fence = Fence(second);
  EXPECT_GT(new_fence, old_fence);

  const std::string old = std::to_string(old_fence);
  for (const std::string sql : {"SELECT idem.heartbeat('pay-2', $1::bigint, '1 minute')",
                                "SELECT idem.complete('pay-2', $1::bigint, 200)",
                                "SELECT idem.release('pay-2', $1::bigint)"}) {
    SqlAnswer stale = conn_->Exec(sql, {old});
    EXPECT_EQ(stale.sqlstate, "IDEM1") << sql << ": " << stale.message;
    EXPECT_NE(stale.message.find("in_progress with fence " + std::to_string(new_fence)),
              std::string::npos)
        << stale.message;
  }
  absl::StatusOr<KeyRecord> record = store_->Get({"", "pay-2"});
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kInProgress);
  EXPECT_EQ(record->fence, new_fence);

  // Another request's acquire never takes a lapsed lease over.
  ASSERT_EQ(conn_->Exec(kAcquire, {"pay-3", "fp", "1 millisecond"}).At(0, 0), "run");
  EXPECT_EQ(conn_->Exec(kAcquire, {"pay-3", "fp-other", "1 minute"}).At(0, 0), "mismatch");
}

TEST_F(SqlLeaseTest, ReleaseGivesTheKeyUpAndARetriedReleaseIsFine) {
  SqlAnswer run = conn_->Exec(kAcquire, {"pay-4", "fp", "1 minute"});
  ASSERT_EQ(run.At(0, 0), "run");
  const std::string fence = std::to_string(Fence(run));
  EXPECT_TRUE(conn_->Exec("SELECT idem.release('pay-4', $1::bigint)", {fence}).ok());
  EXPECT_TRUE(conn_->Exec("SELECT idem.release('pay-4', $1::bigint)", {fence}).ok());
  SqlAnswer again = conn_->Exec(kAcquire, {"pay-4", "fp", "1 minute"});
  EXPECT_EQ(again.At(0, 0), "run");
  EXPECT_GT(Fence(again), Fence(run));
  EXPECT_EQ(conn_->Exec("SELECT idem.release('pay-4', $1::bigint)", {fence}).sqlstate, "IDEM1");
}

// One store-wide fence counter: a key claimed by the C++ store's lease mode is in_progress to
// SQL, completed through SQL with the C++ fence; a key acquired in SQL is heartbeated and
// completed by the C++ store and replayed to SQL.
TEST_F(SqlLeaseTest, SqlAndTheCxxStoreShareKeysAndFences) {
  absl::StatusOr<ClaimResult> claim =
      store_->Claim({.scope = {"acme", "pay-5"}, .fingerprint = "fp", .owner = "c++"});
  ASSERT_TRUE(claim.ok()) << claim.status();
  ASSERT_TRUE(claim->claimed);
  EXPECT_EQ(conn_->Exec("SELECT decision FROM idem.begin('pay-5', 'fp', 'acme')").At(0, 0),
            "in_progress");
  EXPECT_EQ(conn_->Exec(kAcquire, {"pay-5", "fp", "1 minute"}).At(0, 0), "run");  // no tenant
  ASSERT_TRUE(conn_
                  ->Exec("SELECT idem.complete('pay-5', $1::bigint, 201, '{}', "
                         "convert_to('from sql', 'UTF8'), 'acme')",
                         {std::to_string(claim->record.fence)})
                  .ok());
  absl::StatusOr<KeyRecord> done = store_->Get({"acme", "pay-5"});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state, KeyState::kCompleted);
  EXPECT_EQ(done->response.body, "from sql");

  SqlAnswer run = conn_->Exec(kAcquire, {"pay-6", "fp", "1 minute"});
  ASSERT_EQ(run.At(0, 0), "run");
  EXPECT_GT(Fence(run), claim->record.fence);
  const Scope scope{"", "pay-6"};
  ASSERT_TRUE(store_->Heartbeat(scope, Fence(run), std::chrono::minutes(1)).ok());
  ASSERT_TRUE(store_->FailFinal(scope, Fence(run), {.status = 409, .body = "from c++"}).ok());
  SqlAnswer replay = conn_->Exec(kAcquire, {"pay-6", "fp", "1 minute"});
  EXPECT_EQ(replay.At(0, 0), "replay");
  EXPECT_EQ(replay.At(0, 2), "409");
  EXPECT_EQ(replay.At(0, 3), "from c++");
}

}  // namespace
}  // namespace idem::pgtest
