// One process of the guard concurrency test: THREADS threads each send every one of KEYS keys
// through the guard, in the same order, so every key is contended by every thread of every
// process. Writes one line per (thread, key): "KEY<TAB>RESPONSE BODY", to OUTFILE.
//
// usage: guard_stress_worker STORE_URI THREADS KEYS OUTFILE
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "idem/guard.h"
#include "idem/store.h"

namespace {

idem::Effect RecordWriter(const std::string& key, const std::string& writer) {
  return [key, writer](idem::Transaction& tx) -> absl::StatusOr<idem::StoredResponse> {
    idem::SqlValue params[] = {key, writer};
    auto inserted = tx.Execute("INSERT INTO effects(key, writer) VALUES ($1, $2)", params);
    if (!inserted.ok()) return inserted.status();
    return idem::StoredResponse{.status = 200, .body = fmt::format("{} done by {}", key, writer)};
  };
}

// Sends every key once; returns the lines to write, or an error line.
std::vector<std::string> DriveKeys(idem::Store& store, int thread, int keys) {
  idem::GuardOptions options;
  options.transient_retries = 1000;
  idem::Guard guard(store, options);
  const std::string writer = fmt::format("{}/{}", getpid(), thread);
  std::vector<std::string> lines;
  for (int k = 0; k < keys; ++k) {
    const std::string key = fmt::format("key-{}", k);
    auto result = guard.Run({"stress", key}, "fp-" + key, RecordWriter(key, writer));
    if (!result.ok()) {
      lines.push_back(fmt::format("ERROR\t{}\t{}", key, result.status().ToString()));
      continue;
    }
    lines.push_back(fmt::format("{}\t{}", key, result->response.body));
  }
  return lines;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: guard_stress_worker STORE_URI THREADS KEYS OUTFILE\n");
    return 2;
  }
  const int threads = std::atoi(argv[2]);
  const int keys = std::atoi(argv[3]);
  idem::StoreOptions options;
  options.lock_timeout = idem::Millis(60'000);
  options.max_connections = threads;
  auto store = idem::OpenStore(argv[1], options);
  if (!store.ok()) {
    std::fprintf(stderr, "guard_stress_worker: %s\n", store.status().ToString().c_str());
    return 1;
  }
  std::vector<std::vector<std::string>> lines(threads);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] { lines[t] = DriveKeys(**store, t, keys); });
  }
  for (auto& w : workers) w.join();
  std::ofstream out(argv[4]);
  for (const auto& per_thread : lines) {
    for (const auto& line : per_thread) out << line << '\n';
  }
  return out ? 0 : 1;
}
