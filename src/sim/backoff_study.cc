#include "sim/backoff_study.h"

#include <fmt/format.h>

#include "absl/status/status.h"
#include "common/status_macros.h"

namespace idem::sim {
namespace {

// SplitMix64's finaliser: spreads nearby inputs (run 0, 1, 2, ...) over unrelated seeds.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t RunSeed(std::uint64_t seed, int clients, int run) {
  return Mix(Mix(Mix(seed) ^ static_cast<std::uint64_t>(clients)) ^
             static_cast<std::uint64_t>(run));
}

// The study's work done so far and in all, for StudyConfig::progress.
struct Work {
  int64_t done = 0;
  int64_t total = 0;
};

absl::StatusOr<StudyRow> RunCell(const StudyConfig& config, Strategy strategy, int clients,
                                 Work& work) {
  OccRunConfig run_config{strategy, clients, config.backoff, config.network};
  double writes = 0;
  double time_ms = 0;
  for (int run = 0; run < config.runs; ++run) {
    IDEM_ASSIGN_OR_RETURN(const OccRunResult result,
                          SimulateOccRun(run_config, RunSeed(config.seed, clients, run)));
    writes += static_cast<double>(result.writes);
    time_ms += result.time_ms;
    work.done += clients;
    if (config.progress) config.progress(work.done, work.total);
  }
  return StudyRow{strategy, clients, writes / config.runs, time_ms / config.runs};
}

}  // namespace

absl::StatusOr<std::vector<StudyRow>> RunBackoffStudy(const StudyConfig& config) {
  if (config.clients.empty() || config.strategies.empty()) {
    return absl::InvalidArgumentError("the study needs at least one client count and strategy");
  }
  if (config.runs < 1) {
    return absl::InvalidArgumentError(fmt::format("runs must be at least 1, got {}", config.runs));
  }
  std::vector<StudyRow> rows;
  rows.reserve(config.clients.size() * config.strategies.size());
  Work work;
  for (int clients : config.clients) {
    work.total += static_cast<int64_t>(clients) * config.runs *
                  static_cast<int64_t>(config.strategies.size());
  }
  for (int clients : config.clients) {
    for (Strategy strategy : config.strategies) {
      IDEM_ASSIGN_OR_RETURN(StudyRow row, RunCell(config, strategy, clients, work));
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace idem::sim
