#include "sim/amplify_report.h"

#include <fmt/format.h>

#include <cmath>

namespace idem::sim {
namespace {

std::string Number(double value, int decimals) {
  if (value == std::floor(value) && std::abs(value) < 1e15) return fmt::format("{:.0f}", value);
  return fmt::format("{:.{}f}", value, decimals);
}

std::string Describe(Containment containment, const AmplifyConfig& config) {
  switch (containment) {
    case Containment::kNone:
      return "every layer retries";
    case Containment::kBudget:
      return config.budget_floor == 0
                 ? fmt::format("retry budget {}% per layer", config.budget_percent)
                 : fmt::format("retry budget {}% + {} per layer", config.budget_percent,
                               config.budget_floor);
    case Containment::kOneLayer:
      return "only the top layer retries";
  }
  return "";
}

}  // namespace

std::string FormatAmplifyTable(const std::vector<AmplifyRow>& rows, const AmplifyConfig& config) {
  std::string out = fmt::format(
      "Retry amplification: {} layers, up to {} attempts each, the dependency below always "
      "failing.\nCalls per top-level request (mean of {} requests).\n\n",
      config.layers, config.attempts, config.requests);
  out += fmt::format("{:<12} {:<36} {:>16} {:>18}\n", "containment", "", "calls at bottom",
                     "calls on all hops");
  for (const AmplifyRow& row : rows) {
    out += fmt::format("{:<12} {:<36} {:>16} {:>18}\n", ContainmentName(row.containment),
                       Describe(row.containment, config), Number(row.bottom_calls, 2),
                       Number(row.total_calls, 2));
  }
  return out;
}

std::string FormatAmplifyJson(const std::vector<AmplifyRow>& rows, const AmplifyConfig& config) {
  std::string out = "[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const AmplifyRow& row = rows[i];
    out += fmt::format(
        "{}\n  {{\"containment\": \"{}\", \"layers\": {}, \"attempts\": {}, "
        "\"bottom_calls\": {}, \"total_calls\": {}}}",
        i == 0 ? "" : ",", ContainmentName(row.containment), config.layers, config.attempts,
        Number(row.bottom_calls, 4), Number(row.total_calls, 4));
  }
  out += rows.empty() ? "]\n" : "\n]\n";
  return out;
}

}  // namespace idem::sim
