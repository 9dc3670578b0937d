#include "check/check_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace idem::check {

absl::StatusOr<std::vector<std::string>> SelectScenarios(std::string_view only) {
  std::vector<std::string> all(kScenarioNames.begin(), kScenarioNames.end());
  if (only.empty()) return all;
  std::set<std::string, std::less<>> wanted;
  size_t start = 0;
  while (start <= only.size()) {
    const size_t comma = std::min(only.find(',', start), only.size());
    std::string_view name = only.substr(start, comma - start);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (!name.empty()) {
      if (std::find(all.begin(), all.end(), name) == all.end()) {
        return absl::InvalidArgumentError(
            fmt::format("--only: no scenario is named '{}'; the scenarios are {}", name,
                        fmt::join(kScenarioNames, ", ")));
      }
      wanted.emplace(name);
    }
    start = comma + 1;
  }
  if (wanted.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--only names no scenario; give one or more of {}, separated by commas",
                    fmt::join(kScenarioNames, ", ")));
  }
  std::vector<std::string> out;
  for (const std::string& name : all) {
    if (wanted.contains(name)) out.push_back(name);
  }
  return out;
}

}  // namespace idem::check
