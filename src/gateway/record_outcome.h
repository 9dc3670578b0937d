// Internal: the end of a guarded request whose key this process holds and whose upstream call has
// ended: its outcome is recorded with the fence (completed, failed_final, or the 502
// upstream-answer-not-kept problem when the upstream ran the request but its answer could not be
// kept), or the key is released (a transient outcome, or an upstream never reached). The client
// gets only a recorded answer: when the store does not take the outcome at once, it is kept and
// retried (PendingOutcome) and the client waits up to `record_wait`, then gets 503
// outcome-not-recorded and retries with the same key.
//
// Thread-safety: runs on one io thread.
#ifndef IDEM_GATEWAY_RECORD_OUTCOME_H_
#define IDEM_GATEWAY_RECORD_OUTCOME_H_

#include <cstdint>

#include "gateway/asio_includes.h"
#include "gateway/forward.h"
#include "gateway/gateway_context.h"
#include "gateway/guarded_call.h"
#include "gateway/request_decision.h"

namespace idem::gateway {

// Records what the upstream answered for the key held under `ticket` with `fence` (or releases
// it), forgets the key once that write settles (InFlight::ForgetKey, metrics.keys_in_flight), and
// returns the client's answer. A recorded outcome is cached until it expires.
asio::awaitable<GuardedAnswer> RecordOutcome(GatewayContext& ctx, const Route& route,
                                             const GuardedRequest& guarded, uint64_t ticket,
                                             int64_t fence, UpstreamAnswer upstream);

// What is written for a held key (a release, or an outcome) and what its client gets once it is.
struct OutcomePlan {
  KeyOp::Kind kind = KeyOp::Kind::kRelease;
  StoredResponse stored;  // kComplete, kFailFinal
  GuardedAnswer answer;
};

// Writes `plan` for the key held under `ticket` with `fence` as RecordOutcome does (an outcome
// the store does not take at once is kept, retried and the key heartbeated meanwhile; one it
// refuses for ever is replaced by the 502 upstream-answer-not-kept), forgets the key once that
// write settles, and returns the client's answer. Whoever holds a key records through here: a
// forward's answer (RecordOutcome) and a status URL's after a takeover (status_takeover.h).
asio::awaitable<GuardedAnswer> RecordPlannedOutcome(GatewayContext& ctx,
                                                    const GuardedRequest& guarded, uint64_t ticket,
                                                    int64_t fence, OutcomePlan plan);

// Forgets the key held under `ticket` without writing anything (its fence moved) and returns the
// 503 outcome-not-recorded answer saying so.
GuardedAnswer LostKeyAnswer(GatewayContext& ctx, const Scope& scope, uint64_t ticket,
                            int64_t fence);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_RECORD_OUTCOME_H_
