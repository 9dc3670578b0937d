// Internal: every error `idem serve` itself answers is an RFC 9457 problem document
// (application/problem+json) with type, title, status and detail. The HTTP status of each error
// comes from ONE table keyed by where the error arose and its absl code (STYLE.md: fixed meanings
// for codes, mapped to HTTP in one place).
//
// Thread-safety: pure functions.
#ifndef IDEM_GATEWAY_PROBLEM_JSON_H_
#define IDEM_GATEWAY_PROBLEM_JSON_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace idem::gateway {

inline constexpr std::string_view kProblemContentType = "application/problem+json";
// Every problem type is this base followed by its name (docs/gateway.md lists them).
inline constexpr std::string_view kProblemTypeBase = "https://idem.dev/problems/";

// Where an error arose: the same absl code means different things for the client (an
// unavailable store is 503, an unreachable upstream 502).
enum class Origin {
  kRequest,   // the client's request itself (bad key, body too large, slow client)
  kStore,     // the key store (in flight, reused key, store down)
  kUpstream,  // the forwarded call (unreachable, too slow, garbage answer)
};

struct Problem {
  int status = 500;
  std::string type;    // a stable URI naming the kind of problem (listed in docs/gateway.md)
  std::string title;   // the same for every occurrence of the type
  std::string detail;  // this occurrence, for a person: what happened and what to do
  std::optional<int> retry_after_seconds;  // sent as Retry-After when set
  // An extension member "request_id" when set: the id under which the gateway's log tells what
  // the detail does not (a store's own words, which may name its user, host and database).
  std::optional<std::string> request_id;
};

// Returns the problem for `status` (not OK) that arose at `origin`: the one table.
//   request  InvalidArgument 400, ResourceExhausted 413, DeadlineExceeded 408 (slow client)
//   store    InvalidArgument 400, FailedPrecondition 422 (key reused), Aborted 409 (in flight,
//            Retry-After), Unavailable/ResourceExhausted/DeadlineExceeded 503 (Retry-After 1)
//   upstream Unavailable 502, DeadlineExceeded 504, DataLoss/InvalidArgument 502 (bad answer)
//   anything else: 500, with a detail that does not leak internals.
Problem ProblemFor(const absl::Status& status, Origin origin);

// Returns the 503 store-unavailable problem a client gets whenever the key store failed (down,
// busy, full, read-only, corrupt, unexpected): a generic detail and `request_id`, never the
// store's words (they may name its user, host, port and database); the caller logs those under
// `request_id`.
Problem StoreUnavailableProblem(std::string_view request_id);

// Returns the problem document as JSON text.
std::string ProblemBody(const Problem& problem);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_PROBLEM_JSON_H_
