// One run of the optimistic-concurrency contention model behind `idem sim backoff`: N clients
// each update one shared row once (read its version, write it back; the write wins only if the
// version is unchanged) and back off between tries. A discrete-event simulation in virtual
// time, so a run takes microseconds of real time and is exactly repeatable from its seed.
//
// Thread-safety: SimulateOccRun keeps no shared state; concurrent calls are safe.
#ifndef IDEM_SIM_OCC_SIMULATION_H_
#define IDEM_SIM_OCC_SIMULATION_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "sim/backoff_strategy.h"

namespace idem::sim {

// Every network hop (request or reply) takes |Normal(mean_ms, sd_ms)|.
struct NetworkModel {
  double mean_ms = 10;  // default 10 ms
  double sd_ms = 2;     // default 2 ms
};

struct OccRunConfig {
  Strategy strategy = Strategy::kFull;
  int clients = 1;
  BackoffParams backoff;
  NetworkModel network;
};

struct OccRunResult {
  std::int64_t writes = 0;  // write requests the server handled, won or lost
  double time_ms = 0;       // when the last client learnt that its write won
};

// Returns the outcome of one run whose randomness all comes from `seed`.
// Errors: InvalidArgument if clients < 1, base_ms <= 0, cap_ms < base_ms, mean_ms < 0 or
// sd_ms <= 0.
absl::StatusOr<OccRunResult> SimulateOccRun(const OccRunConfig& config, std::uint64_t seed);

}  // namespace idem::sim

#endif  // IDEM_SIM_OCC_SIMULATION_H_
