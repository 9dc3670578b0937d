// RunCheck: one run of `idem check`: every round of the planned scenarios, with fresh keys,
// and what they found taken together.
//
// Thread-safety: runs on the caller's thread.
#ifndef IDEM_CHECK_CHECK_RUN_H_
#define IDEM_CHECK_CHECK_RUN_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "check/check_plan.h"
#include "check/prober.h"
#include "check/scenario.h"

namespace idem::check {

// Exit codes of `idem check`: a contract (docs/idem-check.md); never renumber.
inline constexpr int kExitPassed = 0;  // at least one conclusive pass, and no failure
inline constexpr int kExitFailed = 1;  // some scenario failed
inline constexpr int kExitUsage = 2;   // usage error (also: --count-url gives no count)
// Could not test: the URL could not be reached or never answered (or speaks TLS to http://),
// no keyed scenario reached a verdict (every one not applicable or inconclusive), or the
// --deadline passed before the run ended.
inline constexpr int kExitUnreachable = 3;

// Why the run ended as it did, for --json's stop_reason (a contract, never renamed).
namespace stop_reason {
inline constexpr std::string_view kUnreachable = "unreachable";  // no connection
inline constexpr std::string_view kTlsOnHttp = "tls-on-http";    // http:// to a TLS port
inline constexpr std::string_view kNoAnswer = "no-answer";       // connected, never answered
inline constexpr std::string_view kCountUrl = "count-url";       // --count-url gives no count
inline constexpr std::string_view kDeadline = "deadline";        // --deadline passed
inline constexpr std::string_view kNoVerdict = "no-verdict";     // nothing conclusive
}  // namespace stop_reason

struct CheckReport {
  std::vector<ScenarioResult> results;  // round by round, scenarios in the plan's order
  int passed = 0, failed = 0, not_applicable = 0, reported = 0;  // scenarios, over all rounds
  int inconclusive = 0;
  int requests = 0;  // every request the run sent, counts of effects included
  int64_t elapsed_ms = 0;
  int exit_code = kExitPassed;
  std::string stopped;  // why no scenario ran (exit 2 or 3); empty otherwise
  std::string stop_reason;  // a code from stop_reason when the exit is 2 or 3; else empty
  std::string cut_short;    // why the run could not decide (exit 3 after scenarios ran)
};

// The verdict of scenario `name` over every round in `results`: fail if any round failed, else
// not-applicable if any round was, else inconclusive if any round was, else that of its rounds.
Verdict Overall(const std::vector<ScenarioResult>& results, std::string_view name);

// Runs `plan` through `prober`, keys from `new_key`, within plan.deadline. First opens (and
// closes) a connection to the URL, sending nothing: when that fails nothing else is sent (exit
// 3). With plan.count, reads the count once before any scenario: when that fails, nothing else
// is sent (exit 2). When the first request gets no answer before the URL ever answered, the run
// stops (exit 3), naming TLS when the URL is http:// and its port speaks TLS. `tune` may change
// the scenarios' waits (tests).
CheckReport RunCheck(const Plan& plan, Prober& prober, std::function<std::string()> new_key,
                     const std::function<void(Context&)>& tune);
CheckReport RunCheck(const Plan& plan, Prober& prober, std::function<std::string()> new_key);
CheckReport RunCheck(const Plan& plan, Prober& prober, std::function<std::string()> new_key);

}  // namespace idem::check

#endif  // IDEM_CHECK_CHECK_RUN_H_
