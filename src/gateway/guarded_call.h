// Internal: one guarded request (DESIGN §3) from its claim to its answer: claim the key through
// the KeyService; replay, refuse (422), report in flight (409 or a bounded wait), or forward it
// upstream while a heartbeat extends the lease; then record the outcome with the fence (or
// release the key after a transient outcome) before answering.
//
// Thread-safety: runs on one io thread; the pool belongs to that thread.
#ifndef IDEM_GATEWAY_GUARDED_CALL_H_
#define IDEM_GATEWAY_GUARDED_CALL_H_

#include <string>

#include "gateway/asio_includes.h"
#include "gateway/gateway_context.h"
#include "gateway/metrics.h"
#include "gateway/request_decision.h"
#include "gateway/forward.h"

namespace idem::gateway {

struct GuardedAnswer {
  StoredResponse response;
  Decision decision = Decision::kExecuted;
};

// REQUIRES: `request` holds the whole body; `guarded` was decided from it for `route`.
asio::awaitable<GuardedAnswer> RunGuarded(GatewayContext& ctx, UpstreamPool& pool,
                                          const Route& route, const GuardedRequest& guarded,
                                          http::request<http::string_body> request,
                                          const std::string& request_id);

// Forwards a request unguarded but already read whole (a route whose key would come from the body
// found none): the upstream's answer, or a 502/504 problem.
asio::awaitable<GuardedAnswer> ForwardUnguarded(GatewayContext& ctx, UpstreamPool& pool,
                                                http::request<http::string_body> request);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_GUARDED_CALL_H_
