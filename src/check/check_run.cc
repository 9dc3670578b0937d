#include "check/check_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "check/effect_counter.h"

namespace idem::check {

Verdict Overall(const std::vector<ScenarioResult>& results, std::string_view name) {
  bool any = false, not_applicable = false;
  Verdict verdict = Verdict::kPass;
  for (const ScenarioResult& r : results) {
    if (r.name != name) continue;
    if (r.verdict == Verdict::kFail) return Verdict::kFail;
    if (r.verdict == Verdict::kNotApplicable) not_applicable = true;
    verdict = r.verdict;
    any = true;
  }
  if (!any) return Verdict::kNotApplicable;
  return not_applicable ? Verdict::kNotApplicable : verdict;
}

CheckReport RunCheck(const Plan& plan, Prober& prober, std::function<std::string()> new_key) {
  const auto start = std::chrono::steady_clock::now();
  CheckReport report;
  auto finish = [&] {
    report.requests = prober.requests_sent();
    report.elapsed_ms =
        std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start).count();
    return report;
  };
  if (absl::Status reached = prober.Reach(plan.target.parsed); !reached.ok()) {
    report.exit_code = kExitUnreachable;
    report.stopped =
        fmt::format("cannot reach {}: {}", plan.target.url, std::string(reached.message()));
    return finish();
  }
  if (plan.count.has_value()) {
    if (absl::StatusOr<int64_t> c = ReadCount(prober, *plan.count); !c.ok()) {
      report.exit_code = kExitUsage;
      report.stopped =
          fmt::format("--count-url gives no count: {}", std::string(c.status().message()));
      return finish();
    }
  }
  Context ctx{.prober = prober, .plan = plan, .new_key = std::move(new_key)};
  for (int round = 1; round <= plan.rounds; ++round) {
    for (const std::string& name : plan.scenarios) {
      ScenarioResult r = RunScenario(name, ctx);
      r.round = round;
      report.results.push_back(std::move(r));
    }
  }
  for (const std::string& name : plan.scenarios) {
    switch (Overall(report.results, name)) {
      case Verdict::kPass:
        ++report.passed;
        break;
      case Verdict::kFail:
        ++report.failed;
        break;
      case Verdict::kNotApplicable:
        ++report.not_applicable;
        break;
      case Verdict::kReported:
        ++report.reported;
        break;
    }
  }
  report.exit_code = report.failed > 0 ? kExitFailed : kExitPassed;
  return finish();
}

}  // namespace idem::check
