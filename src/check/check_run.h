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
inline constexpr int kExitPassed = 0;       // every applicable scenario passed
inline constexpr int kExitFailed = 1;       // some scenario failed
inline constexpr int kExitUsage = 2;        // usage error (also: --count-url gives no count)
inline constexpr int kExitUnreachable = 3;  // the URL could not be reached at all

struct CheckReport {
  std::vector<ScenarioResult> results;  // round by round, scenarios in the plan's order
  int passed = 0, failed = 0, not_applicable = 0, reported = 0;  // scenarios, over all rounds
  int requests = 0;  // every request the run sent, counts of effects included
  int64_t elapsed_ms = 0;
  int exit_code = kExitPassed;
  std::string stopped;  // why no scenario ran (exit 2 or 3); empty otherwise
};

// The verdict of scenario `name` over every round in `results`: fail if any round failed, else
// not-applicable if any round was, else that of its rounds.
Verdict Overall(const std::vector<ScenarioResult>& results, std::string_view name);

// Runs `plan` through `prober`, keys from `new_key`. First opens (and closes) a connection to the
// URL, sending nothing: when that fails nothing else is sent (exit 3). With plan.count, reads
// the count once before any scenario: when that fails, nothing else is sent (exit 2).
CheckReport RunCheck(const Plan& plan, Prober& prober, std::function<std::string()> new_key);

}  // namespace idem::check

#endif  // IDEM_CHECK_CHECK_RUN_H_
