#include "sim/backoff_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "idem/retry/backoff.h"

namespace idem::sim {
namespace {

class NoBackoff final : public ClientBackoff {
 public:
  double NextDelayMs(int /*attempt*/, std::mt19937_64& /*rng*/) override { return 0; }
};

// Every strategy that waits is one of the retry toolkit's schedules (idem/retry/backoff.h), so
// the study measures the very formulas idem::retry and `idem call` use, in whole milliseconds.
// The study's attempt counting (1 before the first retry) is passed on as the retry number.
class ToolkitBackoff final : public ClientBackoff {
 public:
  ToolkitBackoff(retry::Jitter jitter, const BackoffParams& params)
      : options_{.jitter = jitter,
                 .base = Millis(std::llround(params.base_ms)),
                 .cap = Millis(std::llround(params.cap_ms))},
        previous_(options_.base) {}
  double NextDelayMs(int attempt, std::mt19937_64& rng) override {
    previous_ = retry::ComputeDelay(options_, attempt, previous_, rng);
    return static_cast<double>(previous_.count());
  }

 private:
  retry::BackoffOptions options_;
  Millis previous_;  // decorrelated jitter grows from the previous delay
};

}  // namespace

const std::vector<Strategy>& AllStrategies() {
  static const std::vector<Strategy> kAll = {Strategy::kNone, Strategy::kExponential,
                                             Strategy::kFull, Strategy::kEqual,
                                             Strategy::kDecorrelated};
  return kAll;
}

const char* StrategyName(Strategy strategy) {
  switch (strategy) {
    case Strategy::kNone:
      return "none";
    case Strategy::kExponential:
      return "exponential";
    case Strategy::kFull:
      return "full";
    case Strategy::kEqual:
      return "equal";
    case Strategy::kDecorrelated:
      return "decorrelated";
  }
  return "unknown";
}

absl::StatusOr<Strategy> ParseStrategy(const std::string& name) {
  for (Strategy strategy : AllStrategies()) {
    if (name == StrategyName(strategy)) return strategy;
  }
  return absl::InvalidArgumentError(fmt::format(
      "unknown backoff strategy '{}': use none, exponential, full, equal or decorrelated", name));
}

std::unique_ptr<ClientBackoff> MakeClientBackoff(Strategy strategy, const BackoffParams& params) {
  switch (strategy) {
    case Strategy::kNone:
      return std::make_unique<NoBackoff>();
    case Strategy::kExponential:
      return std::make_unique<ToolkitBackoff>(retry::Jitter::kNone, params);
    case Strategy::kFull:
      return std::make_unique<ToolkitBackoff>(retry::Jitter::kFull, params);
    case Strategy::kEqual:
      return std::make_unique<ToolkitBackoff>(retry::Jitter::kEqual, params);
    case Strategy::kDecorrelated:
      return std::make_unique<ToolkitBackoff>(retry::Jitter::kDecorrelated, params);
  }
  return std::make_unique<NoBackoff>();
}

}  // namespace idem::sim
