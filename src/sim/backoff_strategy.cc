#include "sim/backoff_strategy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"

namespace idem::sim {
namespace {

// min(cap, base * 2^attempt), without overflowing for large attempts.
double CappedExponential(const BackoffParams& params, int attempt) {
  return std::min(params.cap_ms, std::ldexp(params.base_ms, std::min(attempt, 1000)));
}

double Uniform(double low, double high, std::mt19937_64& rng) {
  return std::uniform_real_distribution<double>(low, high)(rng);
}

class NoBackoff final : public ClientBackoff {
 public:
  double NextDelayMs(int /*attempt*/, std::mt19937_64& /*rng*/) override { return 0; }
};

class ExponentialBackoff final : public ClientBackoff {
 public:
  explicit ExponentialBackoff(const BackoffParams& params) : params_(params) {}
  double NextDelayMs(int attempt, std::mt19937_64& /*rng*/) override {
    return CappedExponential(params_, attempt);
  }

 private:
  BackoffParams params_;
};

class FullJitterBackoff final : public ClientBackoff {
 public:
  explicit FullJitterBackoff(const BackoffParams& params) : params_(params) {}
  double NextDelayMs(int attempt, std::mt19937_64& rng) override {
    return Uniform(0, CappedExponential(params_, attempt), rng);
  }

 private:
  BackoffParams params_;
};

class EqualJitterBackoff final : public ClientBackoff {
 public:
  explicit EqualJitterBackoff(const BackoffParams& params) : params_(params) {}
  double NextDelayMs(int attempt, std::mt19937_64& rng) override {
    const double half = CappedExponential(params_, attempt) / 2;
    return half + Uniform(0, half, rng);
  }

 private:
  BackoffParams params_;
};

// Grows from the previous delay rather than from the attempt number, so it keeps state.
class DecorrelatedBackoff final : public ClientBackoff {
 public:
  explicit DecorrelatedBackoff(const BackoffParams& params)
      : params_(params), previous_ms_(params.base_ms) {}
  double NextDelayMs(int /*attempt*/, std::mt19937_64& rng) override {
    previous_ms_ = std::min(params_.cap_ms, Uniform(params_.base_ms, previous_ms_ * 3, rng));
    return previous_ms_;
  }

 private:
  BackoffParams params_;
  double previous_ms_;
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
      return std::make_unique<ExponentialBackoff>(params);
    case Strategy::kFull:
      return std::make_unique<FullJitterBackoff>(params);
    case Strategy::kEqual:
      return std::make_unique<EqualJitterBackoff>(params);
    case Strategy::kDecorrelated:
      return std::make_unique<DecorrelatedBackoff>(params);
  }
  return std::make_unique<NoBackoff>();
}

}  // namespace idem::sim
