// The run-once guard's cost per operation on SQLite, against the same SQL written by hand
// (bare_sqlite.h). Each operation claims a fresh key, inserts one effect row and records the
// outcome. Single: one transaction (one commit) per operation, Guard::Run. Batch: 100 operations
// per transaction and one commit, Guard::RunBatch; StoreTx does the same through the store's
// transaction API directly (Claim, Savepoint, effect, ReleaseSavepoint, Finish), to separate what
// the store costs from what the guard adds.
//
// Bare SQL takes the savepoints asked for in its "savepoints" argument: 0 none; 1 one around the
// effect, as Guard::Run does (for failed_final); 2 one around each operation plus one around the
// effect, as Guard::RunBatch does (so that one call can be undone alone).
//
// Argument 0 is synchronous: 1 = FULL (the store's default), 0 = NORMAL. Figures are real time;
// items_per_second is operations per second. The database files live under $IDEM_BENCH_DIR
// (default: the current directory): put it on the disk you care about, not on tmpfs.
//
//   build/ledger-rel/bench/guard/guard_sqlite_bench --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true     (one command line)
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bare_sqlite.h"
#include "idem/guard.h"
#include "idem/store.h"

namespace idem::bench {
namespace {

constexpr int kBatch = 100;
// A fingerprint is computed by the caller for both; a fixed one keeps it out of the figures.
constexpr std::string_view kFingerprint =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
constexpr std::string_view kEffectSql =
    "INSERT INTO bench_effects (op_key, amount) VALUES ($1, $2)";

// A fresh directory per benchmark run, removed afterwards.
class BenchDir final {
 public:
  BenchDir() {
    const char* base = std::getenv("IDEM_BENCH_DIR");
    std::string pattern = std::string(base != nullptr ? base : ".") + "/idem-guard-bench-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;
  ~BenchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  bool ok() const { return !path_.empty(); }
  std::string db() const { return path_ + "/bench.db"; }

 private:
  std::string path_;
};

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How a bare operation uses savepoints: none; one around the effect; or, as Guard::RunBatch
// does, one around the whole operation plus one around the effect.
enum Savepoints : int64_t { kNoSavepoints = 0, kEffectSavepoint = 1, kGuardSavepoints = 2 };

// One operation by hand: claim, effect, outcome, with the savepoints asked for.
bool BareOperation(BareSqlite& bare, std::string_view key, int64_t amount, int64_t savepoints) {
  const int64_t now = NowMs();
  const bool per_op = savepoints == kGuardSavepoints;
  const bool effect = savepoints != kNoSavepoints;
  return (!per_op || bare.OpSavepoint()) && bare.Claim(key, kFingerprint, now) &&
         (!effect || bare.Savepoint()) && bare.Effect(key, amount) &&
         (!effect || bare.ReleaseSavepoint()) && bare.RecordOutcome(key, now) &&
         (!per_op || bare.ReleaseOpSavepoint());
}

StoredResponse Created() {
  return StoredResponse{
      .status = 201, .headers = {{"Content-Type", "application/json"}}, .body = R"({"ok":true})"};
}

// Opens a store with the effect table created; null (and the benchmark marked failed) on error.
std::unique_ptr<Store> OpenBenchStore(benchmark::State& state, const BenchDir& dir, bool full) {
  auto store = OpenStore("sqlite:" + dir.db() + (full ? "" : "?synchronous=normal"));
  if (!store.ok()) {
    state.SkipWithError(std::string(store.status().message()).c_str());
    return nullptr;
  }
  auto tx = (*store)->Begin();
  if (!tx.ok() ||
      !(*tx)
           ->Execute("CREATE TABLE bench_effects (op_key TEXT NOT NULL, amount INTEGER NOT NULL)")
           .ok() ||
      !(*tx)->Commit().ok()) {
    state.SkipWithError("cannot create the effect table");
    return nullptr;
  }
  return *std::move(store);
}

void BM_BareSql_Single(benchmark::State& state) {
  BenchDir dir;
  BareSqlite bare;
  if (std::string error = dir.ok() ? bare.Open(dir.db(), state.range(0) != 0) : "no dir";
      !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  int64_t i = 0;
  for (auto _ : state) {
    const std::string key = fmt::format("k-{}", i);
    if (!bare.Begin() || !BareOperation(bare, key, i, state.range(1)) || !bare.Commit()) {
      state.SkipWithError(bare.error().c_str());
      break;
    }
    ++i;
  }
  state.SetItemsProcessed(i);
}

void BM_Guard_Single(benchmark::State& state) {
  BenchDir dir;
  std::unique_ptr<Store> store = OpenBenchStore(state, dir, state.range(0) != 0);
  if (store == nullptr) return;
  Guard guard(*store);
  std::string key;
  int64_t i = 0;
  const Effect effect = [&](Transaction& tx) -> absl::StatusOr<StoredResponse> {
    const std::array<SqlValue, 2> params = {key, i};
    if (auto n = tx.Execute(kEffectSql, params); !n.ok()) return n.status();
    return Created();
  };
  for (auto _ : state) {
    key = fmt::format("k-{}", i);
    auto result = guard.Run(Scope{.tenant = "bench", .key = key}, kFingerprint, effect);
    if (!result.ok() || result->replayed) {
      state.SkipWithError(std::string(result.status().message()).c_str());
      break;
    }
    ++i;
  }
  state.SetItemsProcessed(i);
}

// Bare SQL, 100 operations per transaction; range(1) says which savepoints (Savepoints).
void BM_BareSql_Batch(benchmark::State& state) {
  BenchDir dir;
  BareSqlite bare;
  if (std::string error = dir.ok() ? bare.Open(dir.db(), state.range(0) != 0) : "no dir";
      !error.empty()) {
    state.SkipWithError(error.c_str());
    return;
  }
  const int64_t savepoints = state.range(1);
  int64_t i = 0;
  for (auto _ : state) {
    bool ok = bare.Begin();
    for (int op = 0; ok && op < kBatch; ++op, ++i) {
      ok = BareOperation(bare, fmt::format("k-{}", i), i, savepoints);
    }
    if (!ok || !bare.Commit()) {
      state.SkipWithError(bare.error().c_str());
      break;
    }
  }
  state.SetItemsProcessed(i);
}

// Guard::RunBatch: 100 calls, one transaction, one commit.
void BM_Guard_Batch(benchmark::State& state) {
  BenchDir dir;
  std::unique_ptr<Store> store = OpenBenchStore(state, dir, state.range(0) != 0);
  if (store == nullptr) return;
  Guard guard(*store);
  int64_t i = 0;
  std::vector<GuardCall> calls(kBatch);
  for (auto _ : state) {
    for (GuardCall& call : calls) {
      call.scope = Scope{.tenant = "bench", .key = fmt::format("k-{}", i)};
      call.fingerprint = kFingerprint;
      call.effect = [key = call.scope.key,
                     amount = i](Transaction& tx) -> absl::StatusOr<StoredResponse> {
        const std::array<SqlValue, 2> params = {key, amount};
        if (auto n = tx.Execute(kEffectSql, params); !n.ok()) return n.status();
        return Created();
      };
      ++i;
    }
    auto results = guard.RunBatch(calls);
    absl::Status status = results.status();
    for (size_t c = 0; status.ok() && c < results->size(); ++c) status = (*results)[c].status();
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(i);
}

// One operation the way Guard::Run does it, on a transaction shared by the batch.
absl::Status GuardedOperation(StoreTransaction& tx, const std::string& key, int64_t amount) {
  const Scope scope{.tenant = "bench", .key = key};
  auto claim = tx.Claim(scope, kFingerprint, "bench-owner");
  if (!claim.ok()) return claim.status();
  if (!claim->claimed) return absl::InternalError("a fresh key was not claimed");
  if (absl::Status s = tx.Savepoint("idem_effect"); !s.ok()) return s;
  const std::array<SqlValue, 2> params = {key, amount};
  if (auto n = tx.Execute(kEffectSql, params); !n.ok()) return n.status();
  if (absl::Status s = tx.ReleaseSavepoint("idem_effect"); !s.ok()) return s;
  return tx.Finish(scope, claim->record.fence, KeyState::kCompleted, Created());
}

void BM_StoreTx_Batch(benchmark::State& state) {
  BenchDir dir;
  std::unique_ptr<Store> store = OpenBenchStore(state, dir, state.range(0) != 0);
  if (store == nullptr) return;
  int64_t i = 0;
  for (auto _ : state) {
    auto tx = store->Begin();
    absl::Status status = tx.status();
    for (int op = 0; status.ok() && op < kBatch; ++op, ++i) {
      status = GuardedOperation(**tx, fmt::format("k-{}", i), i);
    }
    if (status.ok()) status = (*tx)->Commit();
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(i);
}

// range(1): the savepoints (Savepoints); 1 is what Guard::Run takes (around the effect).
BENCHMARK(BM_BareSql_Single)
    ->ArgNames({"full", "savepoints"})
    ->Args({1, 0})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Args({0, 1})
    ->UseRealTime();
BENCHMARK(BM_Guard_Single)->ArgName("full")->Arg(1)->Arg(0)->UseRealTime();
BENCHMARK(BM_BareSql_Batch)
    ->ArgNames({"full", "savepoints"})
    ->Args({1, 0})
    ->Args({0, 0})
    ->Args({1, 1})
    ->Args({0, 1})
    ->Args({1, 2})
    ->Args({0, 2})
    ->UseRealTime();
BENCHMARK(BM_Guard_Batch)->ArgName("full")->Arg(1)->Arg(0)->UseRealTime();
BENCHMARK(BM_StoreTx_Batch)->ArgName("full")->Arg(1)->Arg(0)->UseRealTime();

}  // namespace
}  // namespace idem::bench

BENCHMARK_MAIN();
