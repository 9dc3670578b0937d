// One attempt of `idem call` over idem's shared HTTP client (src/http): builds the request,
// sends it within the attempt's time and turns what happened into what the retry policy reads.
//
// Thread-safety: as http::BlockingClient: one attempt at a time per client.
#ifndef IDEM_CLI_CALL_ATTEMPT_H_
#define IDEM_CLI_CALL_ATTEMPT_H_

#include <optional>
#include <string>

#include "cli/call_options.h"
#include "http/blocking_client.h"
#include "idem/clock.h"
#include "idem/retry/retry_policy.h"

namespace idem::cli {

struct AttemptOutcome {
  retry::AttemptResult result;
  std::optional<http::Response> response;  // the final answer, when result.kind is kResponse
  std::string error;                       // what went wrong otherwise, for a person
};

// Sends `request` plus `extra` headers through `client`, giving up after `timeout` (0 = no
// limit) and refusing an answer beyond `limits`. Interim 1xx answers are read past: the outcome
// is the final answer. A failure no retry can change (an unknown host, an answer too large or
// not HTTP) is Kind::kPermanent. Never throws.
AttemptOutcome SendAttempt(http::BlockingClient& client, const CallRequest& request,
                           const HeaderList& extra, Millis timeout, const http::Limits& limits);

}  // namespace idem::cli

#endif  // IDEM_CLI_CALL_ATTEMPT_H_
