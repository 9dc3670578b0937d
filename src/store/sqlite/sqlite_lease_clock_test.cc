// SQLite leases run on the host's boot clock (common/host_clock.h), which steps of the wall clock
// do not move: two stores on one file stand for two processes of one host, each with its wall
// clock (a ManualClock) and one host clock between them; the second one's wall clock is stepped
// as an NTP step or a VM resume would.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/host_clock.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/sqlite/sqlite_options.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using absl::StatusCode;
using testing::CodeOf;
using testing::kFingerprint;
using testing::MakeClaim;
using testing::MakeScope;

constexpr Millis kTenSeconds{10'000};

// The host clock of one boot that every store of the test reads.
class TestHostClock final : public HostClock {
 public:
  HostTime Now() const override { return {"test-boot", millis_.load()}; }
  void Advance(Millis by) { millis_ += by.count(); }

 private:
  std::atomic<int64_t> millis_{1'000'000};
};

class SqliteLeaseClockTest : public ::testing::Test {
 protected:
  SqliteLeaseClockTest() {
    std::string pattern = ::testing::TempDir() + "idem-sqlite-clock-XXXXXX";
    const char* dir = mkdtemp(pattern.data());
    dir_ = dir == nullptr ? std::string() : std::string(dir);
  }
  ~SqliteLeaseClockTest() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Store> Open(ManualClock& clock) {
    StoreOptions options;
    options.clock = &clock;
    absl::StatusOr<std::unique_ptr<Store>> store =
        sqlite::OpenSqliteStoreWithHostClock(dir_ + "/idem.db", "", options, &host_);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  // One claim through the batch (as idem serve claims), with a lease of `lease`.
  LeaseWriteResult Claim(Store& store, const std::string& owner, Millis lease = kTenSeconds) {
    const LeaseWrite write{.kind = LeaseWrite::Kind::kClaim,
                           .scope = MakeScope("k"),
                           .fingerprint = kFingerprint,
                           .owner = owner,
                           .lease = lease};
    absl::StatusOr<std::vector<LeaseWriteResult>> results = store.ApplyLeaseBatch({&write, 1});
    EXPECT_TRUE(results.ok()) << results.status();
    return results.ok() ? results->front() : LeaseWriteResult{};
  }

  // Runs `sql` on the file through a connection of its own.
  void Raw(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((dir_ + "/idem.db").c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }

  // Time passes for both processes: their wall clocks and the host clock.
  void Elapse(Millis by) {
    clock_a_.Advance(by);
    clock_b_.Advance(by);
    host_.Advance(by);
  }

  std::string dir_;
  TestHostClock host_;
  ManualClock clock_a_, clock_b_;  // the same wall time, until B's is stepped (Advance alone)
};

TEST_F(SqliteLeaseClockTest, AWallClockStepForwardTakesNoLiveLeaseOver) {
  std::unique_ptr<Store> a = Open(clock_a_);
  std::unique_ptr<Store> b = Open(clock_b_);
  ASSERT_TRUE(a && b);
  const LeaseWriteResult held = Claim(*a, "gateway-a");
  ASSERT_TRUE(held.claimed);
  Elapse(Millis(1000));
  clock_b_.Advance(Millis(9500));  // by B's wall clock the lease ended 0.5 s ago

  const LeaseWriteResult retry = Claim(*b, "gateway-b");
  IDEM_EXPECT_OK(retry.status);
  EXPECT_FALSE(retry.claimed);
  EXPECT_FALSE(retry.taken_over);
  EXPECT_EQ(retry.record.owner, "gateway-a");
  EXPECT_EQ(retry.record.fence, held.record.fence);
  // The lease-mode calls read the same clock.
  EXPECT_EQ(CodeOf(b->TakeOver(MakeClaim(MakeScope("k"), "gateway-b"), held.record.fence)),
            StatusCode::kAborted);
  IDEM_EXPECT_OK(a->Complete(MakeScope("k"), held.record.fence, testing::SampleResponse()));
}

TEST_F(SqliteLeaseClockTest, AHeartbeatExtendsTheLeaseOnTheHostClock) {
  std::unique_ptr<Store> a = Open(clock_a_);
  std::unique_ptr<Store> b = Open(clock_b_);
  ASSERT_TRUE(a && b);
  const LeaseWriteResult held = Claim(*a, "gateway-a");
  ASSERT_TRUE(held.claimed);
  Elapse(Millis(6000));
  IDEM_ASSERT_OK(a->Heartbeat(MakeScope("k"), held.record.fence, kTenSeconds));  // to 16 s
  Elapse(Millis(9000));
  clock_b_.Advance(Millis(-3'600'000));
  EXPECT_FALSE(Claim(*b, "gateway-b").claimed);  // 15 s: the heartbeat's lease lives
  Elapse(Millis(1000));  // 16 s: it has passed, whatever B's wall clock says
  const LeaseWriteResult taken = Claim(*b, "gateway-b");
  EXPECT_TRUE(taken.claimed);
  EXPECT_TRUE(taken.taken_over);
  EXPECT_GT(taken.record.fence, held.record.fence);
}

TEST_F(SqliteLeaseClockTest, AWallClockStepBackHoldsNoLapsedLease) {
  std::unique_ptr<Store> a = Open(clock_a_);
  std::unique_ptr<Store> b = Open(clock_b_);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Claim(*a, "gateway-a").claimed);
  Elapse(kTenSeconds);
  clock_b_.Advance(Millis(-3'600'000));  // an hour back: B's wall clock says 50 min to go
  const LeaseWriteResult taken = Claim(*b, "gateway-b");
  EXPECT_TRUE(taken.claimed);
  EXPECT_TRUE(taken.taken_over);
}

// The sweeper deletes an in_progress record only once its lease has passed on the host clock.
TEST_F(SqliteLeaseClockTest, TheSweeperKeepsARecordWhoseLeaseLivesOnTheHostClock) {
  std::unique_ptr<Store> a = Open(clock_a_);
  std::unique_ptr<Store> b = Open(clock_b_);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Claim(*a, "gateway-a").claimed);
  Raw("UPDATE idem_keys SET expires = created");  // past its expiry by every wall clock
  clock_b_.Advance(Millis(20'000));
  IDEM_ASSERT_OK_AND_ASSIGN(int64_t swept, b->SweepExpired(100));
  EXPECT_EQ(swept, 0);
  Elapse(kTenSeconds);
  IDEM_ASSERT_OK_AND_ASSIGN(swept, b->SweepExpired(100));
  EXPECT_EQ(swept, 1);
}

// A lease written on another boot of the host (its holder did not survive the reboot), or by an
// idem without a host clock, is read on the wall clock, as before.
TEST_F(SqliteLeaseClockTest, ALeaseOfAnotherBootRunsOnTheWallClock) {
  std::unique_ptr<Store> a = Open(clock_a_);
  std::unique_ptr<Store> b = Open(clock_b_);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(Claim(*a, "gateway-a").claimed);
  Raw("UPDATE idem_keys SET lease_boot = 'an-earlier-boot'");
  clock_b_.Advance(kTenSeconds);
  EXPECT_TRUE(Claim(*b, "gateway-b").taken_over);
  Raw("UPDATE idem_keys SET lease_boot = NULL, lease_host = NULL");
  clock_b_.Advance(kTenSeconds);
  EXPECT_TRUE(Claim(*b, "gateway-c").taken_over);
}

}  // namespace
}  // namespace idem
