// Lease-mode throughput of a key store: claim+complete pairs per second and their latency, with
// T client threads, each pair on a fresh key. Two shapes:
//   single   each thread: Store::Claim, then Store::Complete (two commits per pair)
//   batch:B  each thread: Store::ApplyLeaseBatch of B claims, then of B completes (the gateway's
//            group commit shape; latency is that of a whole batch pair)
// Any store URI works; for the JetStream figures start a cluster first
// (scripts/nats-fixture.sh start DIR 3) and pass nats://...?replicas=3&shards=N with a fresh
// bucket name per run.
//
//   build/release/bench/store/store_lease_bench URI THREADS SECONDS [single|batch:B]
//
// Prints one line: uri (password hidden), shape, threads, pairs/s, p50 and p99 ms per pair.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idem/store.h"

namespace idem::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kFingerprint[] = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

// Every run writes keys of its own tenant, so runs on one store never meet.
const std::string& Tenant() {
  static const std::string tenant = fmt::format("bench-{}", getpid());
  return tenant;
}

StoredResponse Created() {
  return {.status = 201, .headers = {{"Content-Type", "application/json"}}, .body = "{}"};
}

bool Failed(const absl::Status& status) {
  fmt::print(stderr, "{}\n", status.ToString());
  return false;
}

// One claim+complete pair (or B of them) on fresh keys; false on any error (printed).
bool Pair(Store& store, int thread, int64_t& next, int batch) {
  if (batch == 0) {
    const Scope scope{Tenant(), fmt::format("t{}-{}", thread, next++)};
    auto claim = store.Claim({scope, kFingerprint, "bench", std::chrono::seconds(30)});
    absl::Status s =
        claim.ok() ? store.Complete(scope, claim->record.fence, Created()) : claim.status();
    if (!s.ok()) fmt::print(stderr, "{}\n", s.ToString());
    return s.ok();
  }
  std::vector<LeaseWrite> claims, completes;
  for (int i = 0; i < batch; ++i) {
    claims.push_back({.kind = LeaseWrite::Kind::kClaim,
                      .scope = {Tenant(), fmt::format("t{}-{}", thread, next++)},
                      .fingerprint = kFingerprint,
                      .owner = "bench",
                      .lease = std::chrono::seconds(30)});
  }
  auto claimed = store.ApplyLeaseBatch(claims);
  if (!claimed.ok()) return Failed(claimed.status());
  for (int i = 0; i < batch; ++i) {
    const LeaseWriteResult& r = (*claimed)[i];
    if (!r.status.ok() || !r.claimed) return Failed(r.status);
    completes.push_back({.kind = LeaseWrite::Kind::kComplete,
                         .scope = claims[i].scope,
                         .fence = r.record.fence,
                         .response = Created()});
  }
  auto done = store.ApplyLeaseBatch(completes);
  if (!done.ok()) return Failed(done.status());
  return std::all_of(done->begin(), done->end(), [](const auto& r) { return r.status.ok(); });
}

int Run(const std::string& uri, int threads, int seconds, int batch) {
  auto store = OpenStore(uri);
  if (!store.ok()) {
    fmt::print(stderr, "cannot open {}: {}\n", RedactStoreUri(uri), store.status().ToString());
    return 1;
  }
  std::atomic<bool> failed{false};
  std::vector<std::vector<double>> latencies(threads);
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      int64_t next = 0;
      while (!failed && Clock::now() < end) {
        const auto start = Clock::now();
        if (!Pair(**store, t, next, batch)) failed = true;
        latencies[t].push_back(
            std::chrono::duration<double, std::milli>(Clock::now() - start).count());
      }
    });
  }
  for (std::thread& w : workers) w.join();
  if (failed) return 1;
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const double pairs = static_cast<double>(all.size()) * std::max(batch, 1);
  const auto at = [&](double q) {
    return all.empty() ? 0 : all[static_cast<size_t>(q * (all.size() - 1))];
  };
  fmt::print("{}  {}  threads={}  pairs/s={:.0f}  p50={:.2f}ms  p99={:.2f}ms\n",
             RedactStoreUri(uri), batch == 0 ? "single" : fmt::format("batch:{}", batch), threads,
             pairs / seconds, at(0.5), at(0.99));
  return 0;
}

}  // namespace
}  // namespace idem::bench

int main(int argc, char** argv) {
  if (argc < 4) {
    fmt::print(stderr, "usage: {} URI THREADS SECONDS [single|batch:B]\n", argv[0]);
    return 2;
  }
  const std::string shape = argc > 4 ? argv[4] : "single";
  const int batch = shape.starts_with("batch:") ? std::atoi(shape.c_str() + 6) : 0;
  return idem::bench::Run(argv[1], std::max(1, std::atoi(argv[2])), std::max(1, std::atoi(argv[3])),
                          batch);
}
