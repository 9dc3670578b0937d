// Internal: the completer of `idem serve` (docs/gateway.md, "Recovering lapsed claims"). Every
// gateway runs one when a route sets `recover`. Every recover_interval it lists the store's
// in_progress claims whose lease lapsed (KeyQuery::lapsed) and, for each whose note
// (recovery_note.h) names a route that opts in, takes the key over through the store with a new
// fence, as a client's retry would (so no two gateways recover one key at once), then:
//  - resend: sends the stored request upstream again with the same key, and records the answer
//    under the usual outcome rules;
//  - status: GETs the route's status URL: 200 is recorded as the outcome (recovered_status
//    replacing its status when set), 404 releases the key.
// A transient answer (or none) leaves the key in_progress with a lease as long as the backoff
// (with jitter) before the next attempt; after recover_attempts attempts the key is recorded
// failed_final with a 502 recovery-attempts-exhausted problem.
//
// Thread-safety: run RunCompleter on one executor of its own; its store reads block that thread.
#ifndef IDEM_GATEWAY_COMPLETER_H_
#define IDEM_GATEWAY_COMPLETER_H_

#include <string>
#include <string_view>

#include "gateway/asio_includes.h"
#include "gateway/forward.h"
#include "gateway/gateway_context.h"
#include "gateway/lapsed_key.h"  // PercentEncode, once declared here
#include "idem/store.h"

namespace idem::gateway {

// Whether any route of `config` recovers its lapsed claims.
bool AnyRouteRecovers(const GatewayConfig& config);

// Runs the recovery loop until its executor stops. `store` serves the lists of lapsed claims;
// every write goes through ctx.keys. REQUIRES: ctx, pool and store outlive the loop.
asio::awaitable<void> RunCompleter(GatewayContext& ctx, UpstreamPool& pool, Store& store);

// The failed_final answer recorded once a key's recovery attempts ran out: 502,
// problem type recovery-attempts-exhausted; `detail` says what the last attempt got.
StoredResponse RecoveryExhaustedResponse(std::string detail);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_COMPLETER_H_
