// What only SQLite's batch shows: a COMMIT that fails takes the whole batch with it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <vector>

#include "idem/clock.h"
#include "idem/store.h"
#include "store/testing/conformance_helpers.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem {
namespace {

using absl::StatusCode;
using testing::CodeOf;
using testing::kFingerprint;
using testing::kLease;
using testing::MakeClaim;
using testing::MakeScope;
using testing::SampleResponse;

// SQLite's commit hook, installed on every connection this process opens while the test runs:
// while g_fail_commits is set, every COMMIT turns into a rollback (SQLITE_CONSTRAINT_COMMITHOOK).
std::atomic<bool> g_fail_commits{false};

int RefuseCommit(void*) { return g_fail_commits.load() ? 1 : 0; }

int InstallCommitHook(sqlite3* db, const char**, const sqlite3_api_routines*) {
  sqlite3_commit_hook(db, &RefuseCommit, nullptr);
  return SQLITE_OK;
}

class CommitHook {
 public:
  CommitHook() { sqlite3_auto_extension(reinterpret_cast<void (*)()>(&InstallCommitHook)); }
  ~CommitHook() {
    g_fail_commits = false;
    sqlite3_cancel_auto_extension(reinterpret_cast<void (*)()>(&InstallCommitHook));
  }
  CommitHook(const CommitHook&) = delete;
  CommitHook& operator=(const CommitHook&) = delete;
};

TEST(SqliteLeaseBatch, FailedCommitReportsUnavailableForTheWholeBatchAndCommitsNothing) {
  CommitHook hook;
  ManualClock clock;
  StoreOptions options;
  options.clock = &clock;
  absl::StatusOr<std::unique_ptr<Store>> store = testing::SqliteStoreFactory().open_fresh(options);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<ClaimResult> held = (*store)->Claim(MakeClaim(MakeScope("held")));
  ASSERT_TRUE(held.ok()) << held.status();

  const std::vector<LeaseWrite> writes = {{.kind = LeaseWrite::Kind::kClaim,
                                           .scope = MakeScope("fresh"),
                                           .fingerprint = kFingerprint,
                                           .owner = "w",
                                           .lease = kLease},
                                          {.kind = LeaseWrite::Kind::kComplete,
                                           .scope = MakeScope("held"),
                                           .fence = held->record.fence,
                                           .response = SampleResponse()}};
  g_fail_commits = true;
  EXPECT_EQ(CodeOf((*store)->ApplyLeaseBatch(writes)), StatusCode::kUnavailable);
  g_fail_commits = false;

  EXPECT_EQ(CodeOf((*store)->Get(MakeScope("fresh"))), StatusCode::kNotFound);
  absl::StatusOr<KeyRecord> still = (*store)->Get(MakeScope("held"));
  ASSERT_TRUE(still.ok()) << still.status();
  EXPECT_EQ(still->state, KeyState::kInProgress);
  // The connection is good for the next batch, which applies in full.
  absl::StatusOr<std::vector<LeaseWriteResult>> again = (*store)->ApplyLeaseBatch(writes);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE((*again)[0].claimed);
  EXPECT_TRUE((*again)[1].status.ok()) << (*again)[1].status;
}

}  // namespace
}  // namespace idem
