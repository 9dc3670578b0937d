// idem-pg-guard-driver: one process of the PostgreSQL concurrency and fault tests. Its threads,
// each on its own pooled connection, send every key through idem::Guard; each effect INSERTs a
// row naming the key, this process and the thread into `effects`, in the key's transaction.
//
//   idem-pg-guard-driver URI PROCESS THREADS KEYS SEED
//
// Transient errors (Unavailable) are retried until the key completes. Prints, on stdout:
//   progress N        every 25 completed runs of this process (N: runs so far)
//   response KEY BODY once per key, after every thread agreed on the body
//   transient N       how many Unavailable errors the threads saw and retried
// Exit status: 0 all keys completed and agreed; 1 a non-transient error or a disagreement;
// 2 bad arguments; 3 the run did not finish within its deadline.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "idem/guard.h"
#include "idem/store.h"

namespace {

constexpr auto kDeadline = std::chrono::minutes(8);

struct Config {
  std::string uri;
  int process = 0;
  int threads = 0;
  int keys = 0;
  unsigned seed = 0;
};

std::mutex out_mu;
void Print(const std::string& line) {
  std::lock_guard<std::mutex> lock(out_mu);
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string KeyName(int i) { return fmt::format("key-{:04d}", i); }

// Runs every key once through the guard, in a shuffled order; returns the body per key, or an
// empty vector after printing the error.
std::vector<std::string> RunThread(idem::Store& store, const Config& config, int thread,
                                   std::atomic<int64_t>& done, std::atomic<int64_t>& transient) {
  idem::Guard guard(store,
                    idem::GuardOptions{.owner = fmt::format("p{}t{}", config.process, thread)});
  std::vector<int> order(static_cast<size_t>(config.keys));
  for (int i = 0; i < config.keys; ++i) order[static_cast<size_t>(i)] = i;
  std::mt19937 rng(config.seed + static_cast<unsigned>(config.process * 1000 + thread));
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<std::string> bodies(static_cast<size_t>(config.keys));
  const auto deadline = std::chrono::steady_clock::now() + kDeadline;
  for (int i : order) {
    const std::string key = KeyName(i);
    const idem::Effect effect = [&](idem::Transaction& tx) -> absl::StatusOr<idem::StoredResponse> {
      const idem::SqlValue params[] = {key, int64_t{config.process}, int64_t{thread}};
      absl::StatusOr<int64_t> inserted =
          tx.Execute("INSERT INTO effects (k, process, thread) VALUES ($1, $2, $3)", params);
      if (!inserted.ok()) return inserted.status();
      return idem::StoredResponse{
          200, {}, fmt::format("key={} by=p{}/t{}", key, config.process, thread)};
    };
    for (int attempt = 0;; ++attempt) {
      absl::StatusOr<idem::GuardResult> result =
          guard.Run(idem::Scope{"t", key}, "fp-" + key, effect);
      if (result.ok() && result->state == idem::KeyState::kCompleted) {
        bodies[static_cast<size_t>(i)] = result->response.body;
        break;
      }
      if (!result.ok() && !absl::IsUnavailable(result.status())) {
        Print(fmt::format("error {} {}", key, result.status().ToString()));
        return {};
      }
      if (std::chrono::steady_clock::now() > deadline) {
        Print(fmt::format("deadline {} {}", key, result.status().ToString()));
        std::exit(3);
      }
      transient.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(attempt, 20) * 5));
    }
    if (done.fetch_add(1) % 25 == 24) Print(fmt::format("progress {}", done.load()));
  }
  return bodies;
}

int Run(const Config& config) {
  idem::StoreOptions options;
  options.max_connections = config.threads;
  absl::StatusOr<std::unique_ptr<idem::Store>> store = idem::OpenStore(config.uri, options);
  if (!store.ok()) {
    Print(fmt::format("error open {}", store.status().ToString()));
    return 1;
  }
  std::atomic<int64_t> done{0};
  std::atomic<int64_t> transient{0};
  std::vector<std::vector<std::string>> bodies(static_cast<size_t>(config.threads));
  std::vector<std::thread> threads;
  for (int t = 0; t < config.threads; ++t) {
    threads.emplace_back([&, t] {
      bodies[static_cast<size_t>(t)] = RunThread(**store, config, t, done, transient);
    });
  }
  for (std::thread& t : threads) t.join();
  int status = 0;
  for (int k = 0; k < config.keys; ++k) {
    const size_t i = static_cast<size_t>(k);
    for (const auto& per_thread : bodies) {
      if (per_thread.size() != static_cast<size_t>(config.keys) || per_thread[i] != bodies[0][i]) {
        Print(fmt::format("disagree {}", KeyName(k)));
        status = 1;
        break;
      }
    }
    if (status == 0) Print(fmt::format("response {} {}", KeyName(k), bodies[0][i]));
  }
  Print(fmt::format("transient {}", transient.load()));
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s URI PROCESS THREADS KEYS SEED\n", argv[0]);
    return 2;
  }
  Config config{argv[1], std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]),
                static_cast<unsigned>(std::atoi(argv[5]))};
  if (config.threads < 1 || config.keys < 1) return 2;
  return Run(config);
}
