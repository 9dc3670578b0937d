// Internal to src/check: what the scenarios share: building the request, sending it and keeping
// the evidence, re-sending after a 409 (bounded), and comparing answers.
#ifndef IDEM_CHECK_SCENARIO_SUPPORT_H_
#define IDEM_CHECK_SCENARIO_SUPPORT_H_

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "check/scenario.h"

namespace idem::check::detail {

// `key` as a Structured Fields string, the Idempotency-Key form of the IETF draft: "abc".
std::string QuoteKey(std::string_view key);
// `key` as plan.key_format writes it in the key header.
std::string KeyValue(const Plan& plan, std::string_view key);

// The plan's request, with header plan.key_header set to `key_value` when given (sent as is),
// and `body` instead of the plan's when given.
http::Request BuildRequest(const Plan& plan, const std::optional<std::string>& key_value,
                           const std::optional<std::string>& body = std::nullopt);

// The evidence of one request.
Exchange ExchangeOf(std::string label, std::string key_value, const Answer& a);

// Sends `request`, records it in `r` under `label`; returns the answer. Notes in ctx whether the
// URL has answered.
Answer SendOne(Context& ctx, ScenarioResult& r, std::string label, const std::string& key_value,
               http::Request request);
// Notes in ctx that the URL answered, when `a` is an answer.
void NoteAnswer(Context& ctx, const Answer& a);

// What SendSettled went through before its last answer.
struct Tries {
  int conflicts = 0;      // 409s seen
  int server_errors = 0;  // 5xx seen
  std::string replayed_server_error;  // a 5xx that carried a replay marker: "500 with Name: v"
};

// Sends `make()`; while the answer is 409 (the key in flight), waits its Retry-After (see
// Context) and sends again, at most ctx.max_conflict_retries times; while it is 5xx, sends
// again after ctx.server_error_wait (doubling), at most ctx.server_error_resends times. Records
// every request under `label` ("label", "label, again after 409", ...). Returns the last
// answer; `tries` gets what came before it.
Answer SendSettled(Context& ctx, ScenarioResult& r, const std::string& label,
                   const std::string& key_value, const std::function<http::Request()>& make,
                   Tries& tries);

// How long to wait after the 409 `a` before the `resend`th re-send (1 for the first), the first
// wait being `first`.
Millis ConflictWait(const Context& ctx, const Answer& a, int resend, Millis first);
Millis ConflictWait(const Context& ctx, const Answer& a, int resend);

// "sha256:1a2b3c4d5e6f" (the first 12 hex digits of the body's SHA-256).
std::string Digest(const Answer& a);
// "201 sha256:1a2b3c4d5e6f 3ms" or "no answer (connection refused)".
std::string Short(const Answer& a);
// The body for a person: at most 80 characters, bytes that are not printable ASCII as '.',
// quoted; "an empty body" when empty.
std::string Excerpt(const std::string& body);
// Status and body equal.
bool SameAnswer(const Answer& a, const Answer& b);
// A replay marker the answer carries, "Name: value" (any header whose name has "replay" in
// it, such as Idempotent-Replayed), or "".
std::string ReplayMarker(const Answer& a);

// When the first answer under a fresh key (after SendSettled) leaves nothing to check, sets r's
// verdict, reason and why and returns true:
//  - no answer: a failure, but when the URL never answered anything yet, not applicable and
//    ctx.never_answered (the run stops: exit 3);
//  - a 409 that never settled: a failure;
//  - a 5xx after every re-send: a failure when a re-send replayed it (a marker) or a fresh key
//    is served at once (the failure was kept for the key); else not applicable (the API fails
//    every request);
//  - a 3xx (Location named), 401 or 403 (credentials missing), another 4xx: not applicable.
// `what` names the request: "the first request with a fresh key".
bool StopOnFirst(Context& ctx, const Answer& first, const Tries& tries, std::string_view what,
                 ScenarioResult& r);
// The same for an answer that was not re-sent.
bool StopOnFirst(Context& ctx, const Answer& first, std::string_view what, ScenarioResult& r);

// Sets r's verdict when the answers agreed: a pass resting on `marker` (a replay marker seen
// where a replay was expected), else on effects when they are counted (RunScenario judges
// them), else inconclusive. `why` says what agreed.
void Agreed(const Context& ctx, ScenarioResult& r, const std::string& why,
            const std::string& marker);

// Sets r to a failure saying `why` with reason code `code` (keeps the first reason when it
// already failed).
void Fail(ScenarioResult& r, const std::string& why, std::string_view code);

// The words of an inconclusive verdict: how to make the run conclusive.
inline constexpr std::string_view kHowToConclude =
    "inconclusive (count effects with --count-url, or send a replay marker)";

}  // namespace idem::check::detail

#endif  // IDEM_CHECK_SCENARIO_SUPPORT_H_
