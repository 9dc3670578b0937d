// The sweep behind `idem sim backoff`: every strategy at every client count, each averaged
// over many seeded runs of the contention model (sim/occ_simulation.h).
//
// Thread-safety: RunBackoffStudy keeps no shared state; concurrent calls are safe.
#ifndef IDEM_SIM_BACKOFF_STUDY_H_
#define IDEM_SIM_BACKOFF_STUDY_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "sim/backoff_strategy.h"
#include "sim/occ_simulation.h"

namespace idem::sim {

struct StudyConfig {
  std::vector<int> clients;          // client counts to sweep, each >= 1
  std::vector<Strategy> strategies;  // default: all five
  int runs = 100;                    // runs averaged per cell, >= 1
  std::uint64_t seed = 1;            // the whole study is a function of this seed
  BackoffParams backoff;
  NetworkModel network;
  // Called after every run with the work done so far and the whole study's work (a run of c
  // clients counts c). Default: none.
  std::function<void(int64_t done, int64_t total)> progress;
};

// One cell of the study: means over `runs` runs.
struct StudyRow {
  Strategy strategy = Strategy::kNone;
  int clients = 0;
  double writes = 0;   // mean writes per run
  double time_ms = 0;  // mean time until the last client succeeds
};

// Returns one row per (client count, strategy), client counts in the order given and
// strategies in the order given within each. Run r at client count c uses the same seed for
// every strategy (common random numbers), so differences between strategies are not noise of
// the draw.
// Errors: InvalidArgument if clients or strategies is empty, runs < 1, or a run's settings are
// invalid (see SimulateOccRun).
absl::StatusOr<std::vector<StudyRow>> RunBackoffStudy(const StudyConfig& config);

}  // namespace idem::sim

#endif  // IDEM_SIM_BACKOFF_STUDY_H_
