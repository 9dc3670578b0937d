// Lease mode on SQLite with synchronous=FULL: N single lease-mode operations (Store::Claim then
// Store::Complete, each its own transaction and fsync) against the same work as batches of 1, 16
// and 64 through Store::ApplyLeaseBatch (one batch of claims, then one batch of completes: two
// commits per batch). Each operation claims a fresh key and completes it. Figures are real time;
// items_per_second is operations per second. The database files live under $IDEM_BENCH_DIR
// (default: the current directory): put it on the disk you care about, not on tmpfs.
//
//   build/release/bench/guard/lease_batch_bench --benchmark_repetitions=3
//       --benchmark_report_aggregates_only=true     (one command line)
#include <benchmark/benchmark.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "idem/store.h"

namespace idem::bench {
namespace {

constexpr std::string_view kFingerprint =
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

class BenchDir final {
 public:
  BenchDir() {
    const char* base = std::getenv("IDEM_BENCH_DIR");
    std::string pattern = std::string(base != nullptr ? base : ".") + "/idem-lease-bench-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  BenchDir(const BenchDir&) = delete;
  BenchDir& operator=(const BenchDir&) = delete;
  ~BenchDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  std::string uri() const { return "sqlite:" + path_ + "/bench.db"; }
  bool ok() const { return !path_.empty(); }

 private:
  std::string path_;
};

StoredResponse Created() {
  return StoredResponse{
      .status = 201, .headers = {{"Content-Type", "application/json"}}, .body = R"({"ok":true})"};
}

std::unique_ptr<Store> OpenBenchStore(benchmark::State& state, const BenchDir& dir) {
  auto store = dir.ok() ? OpenStore(dir.uri()) : absl::InternalError("no bench directory");
  if (!store.ok()) {
    state.SkipWithError(std::string(store.status().message()).c_str());
    return nullptr;
  }
  return *std::move(store);
}

void BM_Lease_Single(benchmark::State& state) {
  BenchDir dir;
  std::unique_ptr<Store> store = OpenBenchStore(state, dir);
  if (store == nullptr) return;
  int64_t i = 0;
  for (auto _ : state) {
    const Scope scope{"bench", fmt::format("k-{}", i++)};
    auto claim = store->Claim({scope, std::string(kFingerprint), "bench", Millis(30'000)});
    absl::Status status = claim.ok() ? store->Complete(scope, claim->record.fence, Created())
                                     : claim.status();
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      break;
    }
  }
  state.SetItemsProcessed(i);
}

// range(0): writes per batch. One iteration is one batch of claims and one of completes.
void BM_Lease_Batch(benchmark::State& state) {
  BenchDir dir;
  std::unique_ptr<Store> store = OpenBenchStore(state, dir);
  if (store == nullptr) return;
  const auto n = static_cast<size_t>(state.range(0));
  int64_t i = 0;
  std::vector<LeaseWrite> claims(n), completes(n);
  for (auto _ : state) {
    for (size_t w = 0; w < n; ++w) {
      claims[w] = {.kind = LeaseWrite::Kind::kClaim,
                   .scope = {"bench", fmt::format("k-{}", i + static_cast<int64_t>(w))},
                   .fingerprint = std::string(kFingerprint),
                   .owner = "bench",
                   .lease = Millis(30'000)};
    }
    auto claimed = store->ApplyLeaseBatch(claims);
    for (size_t w = 0; claimed.ok() && w < n; ++w) {
      completes[w] = {.kind = LeaseWrite::Kind::kComplete,
                      .scope = claims[w].scope,
                      .fence = (*claimed)[w].record.fence,
                      .response = Created()};
    }
    auto completed = claimed.ok() ? store->ApplyLeaseBatch(completes) : claimed;
    if (!completed.ok() || !(*completed)[0].status.ok()) {
      state.SkipWithError("a batch failed");
      break;
    }
    i += static_cast<int64_t>(n);
  }
  state.SetItemsProcessed(i);
}

BENCHMARK(BM_Lease_Single)->UseRealTime();
BENCHMARK(BM_Lease_Batch)->ArgName("writes")->Arg(1)->Arg(16)->Arg(64)->UseRealTime();

}  // namespace
}  // namespace idem::bench

BENCHMARK_MAIN();
