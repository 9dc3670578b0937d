// Internal: what the gateway answers for each outcome of the key guard (DESIGN §3), without
// sockets: a claim found a stored outcome (replay), a reused key (422), a key in flight (409 with
// Retry-After, or wait); an upstream response is classified, trimmed to what is replayed, and
// stored or not.
//
// Thread-safety: pure functions.
#ifndef IDEM_GATEWAY_GUARD_OUTCOME_H_
#define IDEM_GATEWAY_GUARD_OUTCOME_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "gateway/gateway_config.h"
#include "gateway/problem_json.h"
#include "idem/outcome.h"
#include "idem/record.h"

namespace idem::gateway {

inline constexpr std::string_view kReplayedHeader = "Idempotent-Replayed";

// What a claim's result means for the request.
struct ClaimDecision {
  enum class Kind {
    kForward,   // this request holds the key: forward it upstream
    kReplay,    // the key's stored outcome answers it
    kMismatch,  // 422: the key was used with another request
    kInFlight,  // another request holds the key: 409, or wait when the route says so
  };
  Kind kind = Kind::kForward;
  int retry_after_seconds = 0;  // kInFlight: until the holder's lease lapses, at least 1
};

// Decides from a claim: `claimed` is true when this request won (or took over) the key; otherwise
// `record` is the live record that blocked it. `now_ms` is the store clock's time.
ClaimDecision DecideClaim(bool claimed, const KeyRecord& record, std::string_view fingerprint,
                          int64_t now_ms);

// Returns the answer replaying `stored`: its status, headers and body byte for byte, plus
// Idempotent-Replayed: true.
StoredResponse ReplayResponse(const StoredResponse& stored);

// Returns the part of an upstream response that is stored: status, body, and only the replayable
// headers (Content-Type, Location and the route's replay_headers), in the order received.
StoredResponse ToStored(const StoredResponse& upstream, const Route& route);

// Returns the problem+json answer for `problem` (with Retry-After when set).
StoredResponse ProblemResponse(const Problem& problem);

// The 409 answer for a key in flight, retrying after `retry_after_seconds`.
StoredResponse InFlightResponse(int retry_after_seconds);

// The 422 answer for a key reused with another request.
StoredResponse MismatchResponse();

// The 503 answer (type outcome-not-recorded, Retry-After `retry_after_seconds`) to a request
// whose upstream call ran but whose outcome the gateway could not record in time; `detail` says
// why. The client retries with the same key and gets the recorded answer.
StoredResponse NotRecordedResponse(std::string detail, int retry_after_seconds);

// The 502 problem (type upstream-answer-not-kept) recorded as a key's failed_final outcome when
// the upstream ran the request but its answer could not be kept (`detail`: larger than the limit,
// or cut off after its head arrived): every retry gets this same answer, and the request never
// runs twice.
StoredResponse AnswerNotKeptResponse(std::string detail);

// The 413 problem (type request-too-large-to-recover) to a request on a route with `recover` whose
// note (the stored request, `note_bytes` as StoredResponseBytes counts them) is larger than the key
// store keeps for one key (`limit` bytes; 0: not known). A permanent refusal, not a store fault:
// nothing is stored or forwarded, and a retry of the same request gets the same answer.
StoredResponse TooLargeToRecoverResponse(int64_t note_bytes, int64_t limit);

// The 502 upstream-answer-not-kept recorded (failed_final) instead of an outcome the key store
// refused for ever (OutOfRange: larger than it keeps for one key).
StoredResponse RefusedOutcomeResponse();

// The 503 answer (type store-unavailable, Retry-After 1) to a new guarded request while too many
// outcomes wait to be recorded; nothing is forwarded.
StoredResponse TooManyPendingResponse();

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_GUARD_OUTCOME_H_
