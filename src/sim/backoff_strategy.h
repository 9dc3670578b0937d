// The five retry-delay strategies that `idem sim backoff` compares, as per-client state
// machines driven by a seeded random generator.
//
// Thread-safety: a ClientBackoff belongs to one simulated client; the free functions are
// thread-safe.
#ifndef IDEM_SIM_BACKOFF_STRATEGY_H_
#define IDEM_SIM_BACKOFF_STRATEGY_H_

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace idem::sim {

// The strategies, in the order every report lists them.
enum class Strategy { kNone, kExponential, kFull, kEqual, kDecorrelated };

// Returns all five strategies in report order.
const std::vector<Strategy>& AllStrategies();

// Returns the command-line name: "none", "exponential", "full", "equal" or "decorrelated".
const char* StrategyName(Strategy strategy);

// Returns the strategy named `name` (one of StrategyName's results), or InvalidArgument
// listing the valid names.
absl::StatusOr<Strategy> ParseStrategy(const std::string& name);

// The shared knobs of every strategy, in milliseconds (whole milliseconds: the delays are the
// retry toolkit's, idem::retry::ComputeDelay, which counts in milliseconds).
struct BackoffParams {
  double base_ms = 5;    // the first step; default 5 ms as in the study
  double cap_ms = 2000;  // no delay is ever longer; default 2 s
};

// The delay one client waits before its next try.
class ClientBackoff {
 public:
  virtual ~ClientBackoff() = default;
  // Returns the delay in milliseconds before retry number `attempt` (1 for the first retry:
  // the attempt counter is raised before the first backoff, so the first exponential step is
  // base * 2). Draws from `rng` only for jittered strategies.
  virtual double NextDelayMs(int attempt, std::mt19937_64& rng) = 0;
};

// Returns a fresh per-client backoff of `strategy`.
// REQUIRES: 0 < params.base_ms <= params.cap_ms.
std::unique_ptr<ClientBackoff> MakeClientBackoff(Strategy strategy, const BackoffParams& params);

}  // namespace idem::sim

#endif  // IDEM_SIM_BACKOFF_STRATEGY_H_
