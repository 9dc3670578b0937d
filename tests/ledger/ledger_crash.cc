#include "ledger_crash.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "idem/store.h"
#include "ledger.h"
#include "ledger_files.h"
#include "ledger_process.h"
#include "transfer.h"

namespace idem::ledger_test {
namespace {

using ::testing::StartsWith;

constexpr int kTransfers = 1500;
constexpr int kKills = 20;
constexpr uint64_t kSeed = 20240611;
// Each run is killed after 1..kMaxAppliedPerRun new transfers, so 20 runs (1000 transfers at most)
// leave work for the last. Each run replays what the runs before it applied: these two sizes set
// the test's length (5000 and 150 took about three times as long).
constexpr int kMaxAppliedPerRun = 50;

// Runs idem-ledger apply --progress and kills it once it reported `target` applied transfers.
// Returns how many it reported, or -1 if it finished before the target.
int ApplyUntilKilled(const std::vector<std::string>& args, int target) {
  LedgerProcess process(args);
  EXPECT_TRUE(process.started());
  int applied = 0;
  while (std::optional<std::string> line = process.ReadLine()) {
    if (line->ends_with(" applied") && ++applied == target) {
      Finished killed = process.Kill();
      EXPECT_EQ(killed.signal, SIGKILL) << "exit " << killed.exit_code << ": " << killed.err;
      return applied;
    }
  }
  Finished finished = process.Wait();
  ADD_FAILURE() << "the run finished after " << applied << " applied transfers, before the kill "
                << "target " << target << "; exit " << finished.exit_code << ": " << finished.err;
  return -1;
}

// Kills kKills runs at seeded moments; sets *reported to how many applied transfers they reported
// in all (an out-parameter: GoogleTest's fatal assertions need a void function).
void KillRepeatedly(const std::string& store_uri, const std::string& file, int* reported) {
  const std::vector<std::string> apply = {"apply", "--store", store_uri, "--progress", file};
  std::mt19937_64 rng(kSeed);
  *reported = 0;
  for (int kill = 0; kill < kKills; ++kill) {
    const int target = 1 + static_cast<int>(rng() % kMaxAppliedPerRun);
    const int applied = ApplyUntilKilled(apply, target);
    ASSERT_EQ(applied, target) << "kill " << kill;
    *reported += applied;
  }
}

// The last run, left to finish. At least what the killed runs reported was committed before they
// died, so only the rest can be new now; the summary's three figures cover every line.
void FinishAndCheckSummary(const std::string& store_uri, const std::string& file, int reported) {
  Finished last = RunLedger({"apply", "--store", store_uri, file});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  EXPECT_THAT(last.out, StartsWith("applied "));
  int new_now = -1, replayed_now = -1, rejected_now = -1;
  ASSERT_EQ(std::sscanf(last.out.c_str(), "applied %d, replayed %d, rejected %d", &new_now,
                        &replayed_now, &rejected_now),
            3)
      << last.out;
  EXPECT_EQ(new_now + replayed_now, kTransfers);
  EXPECT_EQ(rejected_now, 0);
  EXPECT_LE(new_now, kTransfers - reported);
  // Transfers the killed runs committed beyond the ones the test had read before each kill: how
  // far past its target, in total, the kills landed.
  ::testing::Test::RecordProperty("committed_beyond_reported", kTransfers - new_now - reported);
}

// Every transfer exactly once: two legs per key, no key missing, no key extra.
void CheckEveryKeyOnce(const std::string& store_uri, const std::vector<std::string>& lines) {
  const std::map<std::string, int64_t> entries = EntriesPerKey(store_uri);
  EXPECT_EQ(entries.size(), static_cast<size_t>(kTransfers));
  for (const std::string& line : lines) {
    const std::string key = ledger::ParseTransfer(line)->key;
    auto found = entries.find(key);
    EXPECT_TRUE(found != entries.end() && found->second == 2)
        << key << " has " << (found == entries.end() ? 0 : found->second) << " entries";
  }
}

// The books balance: each account as the file says, entries and balances agree, sum zero.
void CheckBooksBalance(const std::string& store_uri, const std::vector<std::string>& lines) {
  const std::map<std::string, int64_t> expected = ExpectedBalances(lines);
  EXPECT_EQ(EntrySumsPerAccount(store_uri), expected);
  EXPECT_EQ(StoredBalances(store_uri), expected);
  const int64_t total =
      std::accumulate(expected.begin(), expected.end(), int64_t{0},
                      [](int64_t sum, const auto& kv) { return sum + kv.second; });
  EXPECT_EQ(total, 0);
  Finished balances = RunLedger({"balances", "--store", store_uri});
  EXPECT_EQ(balances.out, ledger::BalancesJson(expected) + "\n");
}

// The store holds a completed record for every key: nothing left in progress.
void CheckEveryKeyCompleted(const std::string& store_uri, const std::vector<std::string>& lines) {
  auto store = OpenStore(store_uri);
  ASSERT_TRUE(store.ok()) << store.status();
  for (const std::string& line : lines) {
    const std::string key = ledger::ParseTransfer(line)->key;
    auto record = (*store)->Get(Scope{.tenant = std::string(ledger::kTenant), .key = key});
    ASSERT_TRUE(record.ok()) << key << ": " << record.status();
    EXPECT_EQ(record->state, KeyState::kCompleted) << key;
  }
}

}  // namespace

void CheckKilledRunsApplyEveryTransferExactlyOnce(const std::string& store_uri,
                                                  const std::string& file) {
  Finished generated = RunLedger(
      {"generate", "--count", std::to_string(kTransfers), "--seed", "11", "--accounts", "25"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const std::vector<std::string> lines = SplitLines(generated.out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(kTransfers));
  ASSERT_NO_FATAL_FAILURE(WriteLines(file, lines));

  int reported = 0;
  ASSERT_NO_FATAL_FAILURE(KillRepeatedly(store_uri, file, &reported));
  ASSERT_NO_FATAL_FAILURE(FinishAndCheckSummary(store_uri, file, reported));
  CheckEveryKeyOnce(store_uri, lines);
  CheckBooksBalance(store_uri, lines);
  CheckEveryKeyCompleted(store_uri, lines);
}

}  // namespace idem::ledger_test
