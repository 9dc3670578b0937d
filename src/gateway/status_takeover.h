// Internal: a client's request (a retry, or a duplicate that waited) that took over a key whose
// earlier holder's lease lapsed, on a route whose lapsed keys are settled by asking the status URL
// (ActionOnLapsedKey: kAskStatus). The earlier holder's request may have run, and the upstream
// does not deduplicate, so the request is not sent: the status URL is asked, as the completer
// would ask it, and its verdict (VerdictOnStatusAnswer) is acted on:
//  - 200: that answer is recorded with this holder's fence and replayed to the client;
//  - 404: the effect never happened; the caller sends the request under the key it holds;
//  - anything else: the key stays held for recover_interval (then the completer or the next retry
//    asks again) and the client gets 409 with Retry-After.
//
// Thread-safety: runs on one io thread.
#ifndef IDEM_GATEWAY_STATUS_TAKEOVER_H_
#define IDEM_GATEWAY_STATUS_TAKEOVER_H_

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
// Returns the client's answer, or nullopt when the status URL said the effect never happened (the
// caller then forwards `request` under `fence`).
asio::awaitable<std::optional<GuardedAnswer>> AskStatusOfTakenOverKey(
    GatewayContext& ctx, UpstreamPool& pool, const Route& route, const GuardedRequest& guarded,
    int64_t fence, const http::request<http::string_body>& request);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_STATUS_TAKEOVER_H_
