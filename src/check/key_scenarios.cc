// The scenarios of requests without a usable key: no-key and bad-key. What they find is reported,
// never counted as a pass: whether an API must refuse them is the API's own rule.
#include <fmt/format.h>

#include <string>
#include <utility>
#include <vector>

#include "check/scenario.h"
#include "check/scenario_support.h"
#include "idem/key.h"

namespace idem::check {
namespace {

// What an answer to a request without a usable key says about the API.
std::string Meaning(const Answer& a) {
  if (a.status == 0) return fmt::format("no answer ({})", a.error);
  if (a.status == 401 || a.status == 403) {
    return fmt::format("refused with {}: credentials are missing, which says nothing about keys",
                       a.status);
  }
  if (a.status / 100 == 3) {
    const std::string location = a.Header("Location");
    return fmt::format("answered {} (a redirect{})", a.status,
                       location.empty() ? "" : " to " + location);
  }
  if (a.status / 100 == 4) return fmt::format("refused with {}", a.status);
  if (a.status >= 500) return fmt::format("answered {} (a server error)", a.status);
  return fmt::format("answered {}: the request ran without a usable key", a.status);
}

}  // namespace

ScenarioResult NoKey(Context& ctx) {
  ScenarioResult r{.name = "no-key", .verdict = Verdict::kReported};
  r.reason = reason::kReported;
  const Answer a =
      detail::SendOne(ctx, r, "without a key", "", detail::BuildRequest(ctx.plan, std::nullopt));
  r.evidence = "without a key " + detail::Short(a);
  r.why = "without a key: " + Meaning(a);
  if (a.status / 100 == 4 && a.status != 401 && a.status != 403) {
    r.why += " (the API requires a key)";
  } else if (a.status / 100 == 2) {
    r.why +=
        "; a retry of such a request would run it again (400 is expected where a key is "
        "required)";
  }
  return r;
}

ScenarioResult BadKey(Context& ctx) {
  ScenarioResult r{.name = "bad-key", .verdict = Verdict::kReported};
  r.reason = reason::kReported;
  const std::string fresh = ctx.new_key();  // so that an API accepting them sees new keys
  r.keys = {fresh};
  std::string tab = fresh;
  tab.insert(tab.size() / 2, 1, '\t');
  std::string long_key = fresh;
  long_key.resize(kMaxKeyLength + 1, 'k');
  // In the key format the API takes (--key-format), so that only the flaw is refused.
  const bool sf = ctx.plan.key_format == KeyFormat::kSfString;
  std::vector<std::pair<std::string, std::string>> cases = {
      {"empty", sf ? "\"\"" : ""},
      {fmt::format("too long ({} characters)", long_key.size()),
       detail::KeyValue(ctx.plan, long_key)},
      {"a control character (a tab)", detail::KeyValue(ctx.plan, tab)},
  };
  if (sf) cases.emplace_back("an sf-string with a bad escape (\\q)", "\"" + fresh + "\\q\"");
  std::vector<std::string> accepted;
  for (const auto& [name, value] : cases) {
    const Answer a =
        detail::SendOne(ctx, r, "key " + name, value, detail::BuildRequest(ctx.plan, value));
    r.evidence += fmt::format("{}{}: {}", r.evidence.empty() ? "" : "; ", name,
                              a.status == 0 ? "no answer" : std::to_string(a.status));
    if (a.status / 100 != 4) {
      accepted.push_back(
          fmt::format("{} ({})", name, a.status == 0 ? "no answer" : std::to_string(a.status)));
    }
  }
  if (accepted.empty()) {
    r.why = "every malformed key was refused with a 4xx";
    return r;
  }
  r.why = fmt::format("{} of {} malformed keys were not refused with a 4xx: ", accepted.size(),
                      cases.size());
  for (size_t i = 0; i < accepted.size(); ++i) r.why += (i == 0 ? "" : ", ") + accepted[i];
  return r;
}

}  // namespace idem::check
