#include "sim/amplify.h"

#include <fmt/format.h>

#include <algorithm>

#include "absl/status/status.h"

namespace idem::sim {
namespace {

absl::Status CheckRange(const char* name, int value, int low, int high) {
  if (value >= low && value <= high) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("{} must be between {} and {}, got {}", name, low, high, value));
}

absl::Status Validate(const AmplifyConfig& config) {
  for (const absl::Status& status :
       {CheckRange("layers", config.layers, 1, 10), CheckRange("attempts", config.attempts, 1, 10),
        CheckRange("budget percent", config.budget_percent, 0, 100),
        CheckRange("budget floor", config.budget_floor, 0, 1000000),
        CheckRange("requests", config.requests, 1, 100000)}) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Returns how many calls a budgeted layer sends down for `incoming` calls that all fail.
// Integer arithmetic keeps "10% of 30 first tries" exactly 3.
std::uint64_t ForwardWithBudget(std::uint64_t incoming, const AmplifyConfig& config) {
  const auto max_retries_per_call = static_cast<std::uint64_t>(config.attempts - 1);
  const auto floor = static_cast<std::uint64_t>(config.budget_floor);
  const auto percent = static_cast<std::uint64_t>(config.budget_percent);
  std::uint64_t first_tries = 0;
  std::uint64_t retries = 0;
  for (std::uint64_t call = 0; call < incoming; ++call) {
    ++first_tries;
    const std::uint64_t allowed = floor + first_tries * percent / 100;
    retries += std::min(max_retries_per_call, allowed > retries ? allowed - retries : 0);
  }
  return first_tries + retries;
}

// Sends `requests` through the stack; `forward(layer, incoming)` says how many calls layer
// `layer` (1-based) sends down for `incoming` calls.
template <typename Forward>
AmplifyRow RunStack(Containment containment, const AmplifyConfig& config, Forward forward) {
  std::uint64_t calls = static_cast<std::uint64_t>(config.requests);
  std::uint64_t total = 0;
  for (int layer = 1; layer <= config.layers; ++layer) {
    calls = forward(layer, calls);
    total += calls;
  }
  const auto requests = static_cast<double>(config.requests);
  return AmplifyRow{containment, static_cast<double>(calls) / requests,
                    static_cast<double>(total) / requests};
}

}  // namespace

const char* ContainmentName(Containment containment) {
  switch (containment) {
    case Containment::kNone:
      return "none";
    case Containment::kBudget:
      return "budget";
    case Containment::kOneLayer:
      return "one-layer";
  }
  return "unknown";
}

absl::StatusOr<std::vector<AmplifyRow>> SimulateAmplification(const AmplifyConfig& config) {
  if (absl::Status status = Validate(config); !status.ok()) return status;
  const auto attempts = static_cast<std::uint64_t>(config.attempts);
  return std::vector<AmplifyRow>{
      RunStack(Containment::kNone, config,
               [&](int, std::uint64_t incoming) { return incoming * attempts; }),
      RunStack(Containment::kBudget, config,
               [&](int, std::uint64_t incoming) { return ForwardWithBudget(incoming, config); }),
      RunStack(Containment::kOneLayer, config,
               [&](int layer, std::uint64_t incoming) {
                 return layer == 1 ? incoming * attempts : incoming;
               }),
  };
}

}  // namespace idem::sim
