// The scenarios of `idem check` (docs/idem-check.md): each sends requests with fresh keys, looks
// at what came back (and, when counted, how many effects it caused) and decides a verdict with
// the evidence that decided it.
//
// Thread-safety: a scenario runs on the caller's thread, through the context's Prober.
#ifndef IDEM_CHECK_SCENARIO_H_
#define IDEM_CHECK_SCENARIO_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "check/check_plan.h"
#include "check/prober.h"

namespace idem::check {

// Names are a contract (--json, the table): never renamed.
enum class Verdict {
  kPass,           // the API kept the promise
  kFail,           // it did not; `why` says how
  kNotApplicable,  // the request itself was refused (4xx): no promise about effects to check
  kReported,       // no-key and bad-key: the API's answers, never counted as a pass
  // The answers agreed, but nothing showed the request ran once: no effects were counted and
  // no replay marker was seen. Never a pass.
  kInconclusive,
};
// "pass", "fail", "not-applicable", "reported", "inconclusive"
std::string_view VerdictName(Verdict v);

// The `reason` codes of --json (a contract, never renamed; docs/idem-check.md lists them).
namespace reason {
inline constexpr std::string_view kReplayMarker = "replay-marker";    // pass: a marker showed it
inline constexpr std::string_view kOneEffectPerKey = "one-effect-per-key";  // pass: counted
inline constexpr std::string_view kNoEvidence = "no-evidence";          // inconclusive
inline constexpr std::string_view kOtherAnswer = "other-answer";        // an answer differed
inline constexpr std::string_view kSeveralAnswers = "several-answers";  // concurrent
inline constexpr std::string_view kRanMoreThanOnce = "ran-more-than-once";  // unmarked answers
inline constexpr std::string_view kEffectCount = "effect-count";        // not 1 effect per key
inline constexpr std::string_view kCountUnreadable = "count-unreadable";
inline constexpr std::string_view kOtherBodyAccepted = "other-body-accepted";  // mismatch
inline constexpr std::string_view kLostRequestForgotten = "lost-request-forgotten";
inline constexpr std::string_view kKeyForgotten = "key-forgotten";  // retention
inline constexpr std::string_view kServerErrorCached = "server-error-cached";
inline constexpr std::string_view kServerError = "server-error";  // 5xx to every re-send
inline constexpr std::string_view kNoAnswer = "no-answer";
inline constexpr std::string_view kStillInFlight = "still-in-flight";  // 409 after every re-send
inline constexpr std::string_view kRequestRefused = "request-refused";  // a 4xx to a fresh key
inline constexpr std::string_view kCredentialsMissing = "credentials-missing";  // 401, 403
inline constexpr std::string_view kRedirect = "redirect";                       // a 3xx
inline constexpr std::string_view kDeadline = "deadline";  // --deadline passed first
inline constexpr std::string_view kReported = "reported";  // no-key, bad-key
inline constexpr std::string_view kInternal = "internal-error";
}  // namespace reason

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
  std::string reason;  // a code from idem::check::reason, for --json
  // Effects the scenario's keys must have caused, one per key that was served; -1: none
  // expected to be judged (reported scenarios).
  int expected_effects = -1;
  // A pass resting on the count alone: without counted effects it is inconclusive.
  bool needs_count = false;
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
  // concurrent: the first wait before re-sending a burst's 409s (later ones double), short so
  // that --bursts bursts take about a second against an API whose first request ends at once.
  Millis burst_conflict_wait{100};
  // A request answered 5xx is sent again with its key, at most this many times, after
  // server_error_wait, then twice as long each time: a transient failure must not be kept.
  int server_error_resends = 4;
  Millis server_error_wait{100};
  // Effects settle before they are read: the count is read every count_poll until it has not
  // changed for count_quiet, for count_settle_max at most.
  Millis count_poll{40};
  Millis count_quiet{200};
  Millis count_settle_max{5000};
  // The whole run ends here (--deadline): no request or wait starts after it.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();

  // What the run learnt so far (set by the scenarios).
  bool answered = false;          // the URL has given some answer
  bool never_answered = false;    // a request got no answer before the URL ever gave one
  std::string never_answered_why;  // that request's error
  absl::StatusCode never_answered_code = absl::StatusCode::kOk;
  std::optional<int64_t> last_count;  // the settled count after the last scenario

  bool DeadlinePassed() const { return std::chrono::steady_clock::now() >= deadline; }
  // Sleeps `d`, never past the deadline.
  void Wait(Millis d) const;
};

// Reads the plan's count of effects once it has settled: unchanged for ctx.count_quiet.
absl::StatusOr<int64_t> ReadSettledCount(Context& ctx);

// Runs scenario `name` (one of kScenarioNames) once, with effects counted around it when the
// plan says so. Never throws.
ScenarioResult RunScenario(std::string_view name, Context& ctx);

// The scenarios themselves (effects not counted here; RunScenario does it).
ScenarioResult Replay(Context& ctx);
ScenarioResult Mismatch(Context& ctx);
ScenarioResult Concurrent(Context& ctx);
ScenarioResult LostAnswer(Context& ctx);
ScenarioResult Retention(Context& ctx);
ScenarioResult NoKey(Context& ctx);
ScenarioResult BadKey(Context& ctx);

}  // namespace idem::check

#endif  // IDEM_CHECK_SCENARIO_H_
