// The scenarios of `idem check` (docs/idem-check.md): each sends requests with fresh keys, looks
// at what came back (and, when counted, how many effects it caused) and decides a verdict with
// the evidence that decided it.
//
// Thread-safety: a scenario runs on the caller's thread, through the context's Prober.
#ifndef IDEM_CHECK_SCENARIO_H_
#define IDEM_CHECK_SCENARIO_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/check_plan.h"
#include "check/prober.h"

namespace idem::check {

// Names are a contract (--json, the table): never renamed.
enum class Verdict {
  kPass,           // the API kept the promise
  kFail,           // it did not; `why` says how
  kNotApplicable,  // the request itself was refused (4xx): no promise about effects to check
  kReported,       // no-key and bad-key: the API's answers, never counted as a pass
};
std::string_view VerdictName(Verdict v);  // "pass", "fail", "not-applicable", "reported"

// One request a scenario sent and what came back.
struct Exchange {
  std::string label;        // which request of the scenario: "first", "replay", "retry 2", ...
  std::string key;          // the key header's value as sent; empty when none was sent
  int status = 0;           // 0: no answer
  std::string body_sha256;  // hex SHA-256 of the answer's body; empty without an answer
  int64_t elapsed_ms = 0;
  std::string retry_after;  // the answer's Retry-After, if any
  std::string replayed;     // a replay marker the answer carried ("Idempotent-Replayed: true")
  std::string error;        // why there is no answer
};

struct ScenarioResult {
  std::string name;
  int round = 1;
  Verdict verdict = Verdict::kPass;
  std::string why;                  // one or two sentences: what decided the verdict
  std::string evidence;             // one line of statuses, digests and timings, for the table
  std::vector<std::string> keys;    // the fresh keys the scenario used
  std::vector<Exchange> exchanges;  // every request it sent, in order
  std::optional<int64_t> effects;   // effects counted during the scenario; none: not counted
  int64_t elapsed_ms = 0;
};

struct Context {
  Prober& prober;
  const Plan& plan;
  std::function<std::string()> new_key;  // a fresh key (a UUIDv7 by default)
  // Waits before re-sending a request answered 409: the first re-send after conflict_wait, each
  // later one after twice the one before; never more than the answer's Retry-After (a gateway's
  // is often its whole lease, while the first request ends much sooner) nor max_conflict_wait,
  // never less than min_conflict_wait.
  Millis conflict_wait{500};
  Millis min_conflict_wait{100};
  Millis max_conflict_wait{5000};
  int max_conflict_retries = 10;  // re-sends of one request answered 409, at most
  // lost-answer: the pause between hanging up and the retry, so that the first request has
  // reached the API before its retry, as when a client's retry follows a timeout.
  Millis lost_answer_pause{250};
};

// Runs scenario `name` (one of kScenarioNames) once, with effects counted around it when the
// plan says so. Never throws.
ScenarioResult RunScenario(std::string_view name, Context& ctx);

// The scenarios themselves (effects not counted here; RunScenario does it).
ScenarioResult Replay(Context& ctx);
ScenarioResult Mismatch(Context& ctx);
ScenarioResult Concurrent(Context& ctx);
ScenarioResult LostAnswer(Context& ctx);
ScenarioResult NoKey(Context& ctx);
ScenarioResult BadKey(Context& ctx);

}  // namespace idem::check

#endif  // IDEM_CHECK_SCENARIO_H_
