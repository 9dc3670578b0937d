// Many processes on one SQLite file: the unique-constraint claim and BEGIN IMMEDIATE hold across
// processes, not only across threads of one process.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "idem/sqlite_store.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using idem::testing::MakeClaim;
using idem::testing::MakeScope;

constexpr int kProcesses = 6;
// Exit codes of a child.
constexpr int kWon = 10;
constexpr int kLost = 11;
constexpr int kFailed = 12;

std::string NewDbPath() {
  std::string pattern = ::testing::TempDir() + "idem-sqlite-proc-XXXXXX";
  const char* dir = mkdtemp(pattern.data());
  return dir == nullptr ? std::string() : std::string(dir) + "/idem.db";
}

// Forks kProcesses children that each open `path`, wait on `gate` until the parent closes it,
// run `body` and exit with its code. Returns the children's exit codes.
template <typename Body>
std::vector<int> RunChildren(const std::string& path, const Body& body) {
  int gate[2];
  if (pipe(gate) != 0) return {};
  std::vector<pid_t> children;
  for (int i = 0; i < kProcesses; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      close(gate[1]);
      StoreOptions options;
      options.lock_timeout = std::chrono::seconds(60);
      absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path, "", options);
      char byte;
      while (read(gate[0], &byte, 1) > 0) {
      }
      if (!store.ok()) {
        // The parent only sees the exit code: say why here.
        std::fprintf(stderr, "child %d: open failed: %s\n", i, store.status().ToString().c_str());
        _exit(kFailed);
      }
      _exit(body(**store, i));
    }
    children.push_back(pid);
  }
  close(gate[0]);
  close(gate[1]);  // every child starts now
  std::vector<int> codes;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return codes;
}

TEST(SqliteStoreProcesses, ManyProcessesClaimingOneKeyExactlyOneWins) {
  const std::string path = NewDbPath();
  std::vector<int> codes = RunChildren(path, [](Store& store, int i) {
    absl::StatusOr<ClaimResult> claim =
        store.Claim(MakeClaim(MakeScope("hot"), "proc-" + std::to_string(i)));
    if (!claim.ok()) return kFailed;
    return claim->claimed ? kWon : kLost;
  });
  ASSERT_EQ(codes.size(), static_cast<size_t>(kProcesses));
  EXPECT_EQ(std::count(codes.begin(), codes.end(), kWon), 1);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), kLost), kProcesses - 1);
}

TEST(SqliteStoreProcesses, ManyProcessesRunningOneKeyInTransactionsCommitOneEffect) {
  const std::string path = NewDbPath();
  std::vector<int> codes = RunChildren(path, [](Store& store, int i) {
    absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
    if (!tx.ok()) return kFailed;
    const Scope scope = MakeScope("transfer-1");
    absl::StatusOr<ClaimResult> claim = (*tx)->Claim(scope, "fp", "proc-" + std::to_string(i));
    if (!claim.ok()) return kFailed;
    if (!claim->claimed) return (*tx)->Rollback().ok() ? kLost : kFailed;
    const bool ok =
        (*tx)->Execute("CREATE TABLE IF NOT EXISTS effects (id INTEGER PRIMARY KEY)").ok() &&
        (*tx)->Execute("INSERT INTO effects DEFAULT VALUES").ok() &&
        (*tx)->Finish(scope, claim->record.fence, KeyState::kCompleted, {200, {}, "ok"}).ok() &&
        (*tx)->Commit().ok();
    return ok ? kWon : kFailed;
  });
  EXPECT_EQ(std::count(codes.begin(), codes.end(), kWon), 1);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), kLost), kProcesses - 1);
  absl::StatusOr<std::unique_ptr<Store>> store = OpenSqliteStore(path, "", StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = (*store)->Begin();
  ASSERT_TRUE(tx.ok()) << tx.status();
  absl::StatusOr<std::vector<SqlRow>> rows = (*tx)->Query("SELECT count(*) FROM effects");
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(*rows, (std::vector<SqlRow>{{int64_t{1}}}));
}

}  // namespace
}  // namespace idem
