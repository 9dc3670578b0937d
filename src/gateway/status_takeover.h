// Internal: a client's request (a retry, or a duplicate that waited) that took over a key whose
// earlier holder's lease lapsed, on a route whose lapsed keys are settled by asking the status URL
// (ActionOnLapsedKey: kAskStatus). The earlier holder's request may have run, and the upstream
// does not deduplicate, so the request is not sent: the status URL is asked, as the completer
// would ask it, and its verdict (VerdictOnStatusAnswer) is acted on:
//  - 200: that answer is recorded with this holder's fence and replayed to the client; a 200 too
//    large to keep records what the request's own answer would (VerdictOnAnswer: the 502
//    upstream-answer-not-kept), since asking again would only get it again;
//  - 404: the effect never happened; the caller sends the request under the key it holds;
//  - anything else: the key stays held for recover_interval (then the completer or the next retry
//    asks again) and the client gets 409 with Retry-After.
// While the status URL is asked and its answer recorded the key is held as a forward's is
// (InFlight::HoldKey: the LeaseTicker heartbeats it, and a recording the store does not take at
// once is kept and retried, RecordPlannedOutcome), so no retry takes it over meanwhile.
//
// Thread-safety: runs on one io thread.
#ifndef IDEM_GATEWAY_STATUS_TAKEOVER_H_
#define IDEM_GATEWAY_STATUS_TAKEOVER_H_

#include <chrono>
#include <cstdint>
#include <optional>

#include "gateway/asio_includes.h"
#include "gateway/forward.h"
#include "gateway/gateway_context.h"
#include "gateway/guarded_call.h"
#include "gateway/request_decision.h"

namespace idem::gateway {

// REQUIRES: this process holds `guarded`'s key with `fence`, taken over from a lapsed holder (or
// perhaps so: a claim whose acknowledgement was lost), on `route` with recover = "status".
// `*lease_end` is when the key's lease is known to run out (this host's steady clock).
// Returns the client's answer, or nullopt when the status URL said the effect never happened (the
// caller then forwards `request` under `fence`, its lease known to run to `*lease_end`, which
// heartbeats meanwhile may have moved on).
asio::awaitable<std::optional<GuardedAnswer>> AskStatusOfTakenOverKey(
    GatewayContext& ctx, UpstreamPool& pool, const Route& route, const GuardedRequest& guarded,
    int64_t fence, std::chrono::steady_clock::time_point* lease_end,
    const http::request<http::string_body>& request);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_STATUS_TAKEOVER_H_
