#include "check/check_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "check/effect_counter.h"
#include "idem/retry/duration.h"

namespace idem::check {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Whether the http:// URL's port speaks TLS: a TLS handshake with it gets through, or fails on
// its certificate only.
bool SpeaksTls(Prober& prober, const http::Url& url) {
  if (url.origin.tls()) return false;
  http::Url tls = url;
  tls.origin.scheme = http::Scheme::kHttps;
  const absl::Status s = prober.Reach(tls);
  return s.ok() || s.code() == absl::StatusCode::kUnauthenticated;
}

void Count(CheckReport& report, const Plan& plan) {
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
      case Verdict::kInconclusive:
        ++report.inconclusive;
        break;
    }
  }
}

}  // namespace

Verdict Overall(const std::vector<ScenarioResult>& results, std::string_view name) {
  bool any = false, not_applicable = false, inconclusive = false;
  Verdict verdict = Verdict::kPass;
  for (const ScenarioResult& r : results) {
    if (r.name != name) continue;
    if (r.verdict == Verdict::kFail) return Verdict::kFail;
    if (r.verdict == Verdict::kNotApplicable) not_applicable = true;
    if (r.verdict == Verdict::kInconclusive) inconclusive = true;
    verdict = r.verdict;
    any = true;
  }
  if (!any) return Verdict::kNotApplicable;
  if (not_applicable) return Verdict::kNotApplicable;
  return inconclusive ? Verdict::kInconclusive : verdict;
}

CheckReport RunCheck(const Plan& plan, Prober& prober, std::function<std::string()> new_key) {
  return RunCheck(plan, prober, std::move(new_key), [](Context&) {});
}

CheckReport RunCheck(const Plan& plan, Prober& prober, std::function<std::string()> new_key,
                     const std::function<void(Context&)>& tune) {
  const auto start = SteadyClock::now();
  CheckReport report;
  auto finish = [&] {
    report.requests = prober.requests_sent();
    report.elapsed_ms = std::chrono::duration_cast<Millis>(SteadyClock::now() - start).count();
    return report;
  };
  Context ctx{.prober = prober, .plan = plan, .new_key = std::move(new_key)};
  ctx.deadline = start + plan.deadline;
  tune(ctx);
  prober.set_deadline(ctx.deadline);
  if (absl::Status reached = prober.Reach(plan.target.parsed); !reached.ok()) {
    report.exit_code = kExitUnreachable;
    report.stop_reason = ctx.DeadlinePassed() ? stop_reason::kDeadline : stop_reason::kUnreachable;
    report.stopped =
        fmt::format("cannot reach {}: {}", plan.target.url, std::string(reached.message()));
    return finish();
  }
  if (plan.count.has_value()) {
    absl::StatusOr<int64_t> c = ReadSettledCount(ctx);
    if (!c.ok()) {
      report.exit_code = kExitUsage;
      report.stop_reason = stop_reason::kCountUrl;
      report.stopped =
          fmt::format("--count-url gives no count: {}", std::string(c.status().message()));
      return finish();
    }
    ctx.last_count = *c;
  }
  bool deadline = false;
  for (int round = 1; round <= plan.rounds && !deadline; ++round) {
    for (const std::string& name : plan.scenarios) {
      if (ctx.DeadlinePassed()) {
        deadline = true;
        break;
      }
      ScenarioResult r = RunScenario(name, ctx);
      r.round = round;
      if (ctx.DeadlinePassed() && r.verdict == Verdict::kFail &&
          (r.reason == reason::kNoAnswer || r.reason == reason::kStillInFlight ||
           r.reason == reason::kCountUnreadable)) {
        // Cut short by the deadline, not failed by the API.
        r.verdict = Verdict::kNotApplicable;
        r.reason = reason::kDeadline;
        r.why = "the --deadline passed while the scenario ran: " + r.why;
      }
      report.results.push_back(std::move(r));
      if (ctx.never_answered) {
        report.exit_code = kExitUnreachable;
        const bool too_large = ctx.never_answered_code == absl::StatusCode::kResourceExhausted;
        const bool tls = !too_large && SpeaksTls(prober, plan.target.parsed);
        report.stop_reason = tls ? stop_reason::kTlsOnHttp : stop_reason::kNoAnswer;
        if (tls) {
          report.stopped = fmt::format(
              "{} speaks TLS: the request sent as plain HTTP got no answer ({}); use https://",
              plan.target.parsed.origin.ToString(), ctx.never_answered_why);
        } else if (too_large) {
          report.stopped = fmt::format("{} gave no answer within --max-answer: {}",
                                       plan.target.url, ctx.never_answered_why);
        } else {
          report.stopped = fmt::format("{} accepted the connection but never answered: {}",
                                       plan.target.url, ctx.never_answered_why);
        }
        return finish();
      }
    }
  }
  Count(report, plan);
  deadline = deadline || ctx.DeadlinePassed();
  bool keyed_pass = false;
  for (const std::string& name : plan.scenarios) {
    if (IsKeyed(name) && Overall(report.results, name) == Verdict::kPass) keyed_pass = true;
  }
  if (report.failed > 0) {
    report.exit_code = kExitFailed;
  } else if (deadline) {
    report.exit_code = kExitUnreachable;
    report.stop_reason = stop_reason::kDeadline;
    report.cut_short = fmt::format("the --deadline of {} passed before every scenario ran",
                                   retry::FormatDuration(plan.deadline));
  } else if (!keyed_pass) {
    report.exit_code = kExitUnreachable;
    report.stop_reason = stop_reason::kNoVerdict;
    report.cut_short =
        "no keyed scenario reached a verdict (each was not applicable or inconclusive): the API "
        "could not be tested";
  } else {
    report.exit_code = kExitPassed;
  }
  return finish();
}

}  // namespace idem::check
