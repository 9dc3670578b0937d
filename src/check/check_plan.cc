#include "check/check_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace idem::check {

bool IsKeyed(std::string_view name) { return name != "no-key" && name != "bad-key"; }

absl::StatusOr<KeyFormat> ParseKeyFormat(std::string_view name) {
  if (name == "sf") return KeyFormat::kSfString;
  if (name == "token") return KeyFormat::kSfToken;
  if (name == "raw") return KeyFormat::kRaw;
  return absl::InvalidArgumentError(fmt::format(
      "--key-format '{}': give sf (\"key\", the IETF draft's form), token (key as a "
      "Structured Fields token) or raw (the key as is)",
      name));
}

std::string_view KeyFormatName(KeyFormat format) {
  switch (format) {
    case KeyFormat::kSfToken:
      return "token";
    case KeyFormat::kRaw:
      return "raw";
    case KeyFormat::kSfString:
      break;
  }
  return "sf";
}

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
