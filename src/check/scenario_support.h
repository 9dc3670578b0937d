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

// The plan's request, with header plan.key_header set to `key_value` when given (sent as is),
// and `body` instead of the plan's when given.
http::Request BuildRequest(const Plan& plan, const std::optional<std::string>& key_value,
                           const std::optional<std::string>& body = std::nullopt);

// The evidence of one request.
Exchange ExchangeOf(std::string label, std::string key_value, const Answer& a);

// Sends `request`, records it in `r` under `label`; returns the answer.
Answer SendOne(Context& ctx, ScenarioResult& r, std::string label, const std::string& key_value,
               http::Request request);

// Sends `make()`, and while the answer is 409 (the key in flight), waits its Retry-After (see
// Context) and sends again, at most ctx.max_conflict_retries times. Records every request under
// `label` ("label", "label, again after 409", ...); adds the 409s seen to `conflicts`. Returns
// the last answer.
Answer SendSettled(Context& ctx, ScenarioResult& r, const std::string& label,
                   const std::string& key_value, const std::function<http::Request()>& make,
                   int& conflicts);

// How long to wait after the 409 `a` before the `resend`th re-send (1 for the first).
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

// When the first answer of a scenario leaves nothing to check, sets r's verdict and why and
// returns true: no answer, a 5xx or a 409 that never settled is a failure (a fresh key must be
// served); another 4xx means the request itself was refused (not applicable: give one the API
// accepts). `what` names the request: "the first request with a fresh key".
bool StopOnFirst(const Answer& first, std::string_view what, ScenarioResult& r);

// Sets r to a failure saying `why` (keeps the first reason when it already failed).
void Fail(ScenarioResult& r, const std::string& why);

}  // namespace idem::check::detail

#endif  // IDEM_CHECK_SCENARIO_SUPPORT_H_
