// Internal: from a request's method, target, headers and body to what the gateway does with it
// (DESIGN §3), without sockets. Two steps, because a pass-through request is streamed and its
// body never read:
//   1. DecideHead, from the request line and headers: pass through, guard (read the body), or
//      refuse (400: missing, malformed, duplicate or list-valued key).
//   2. DecideGuarded, once the body is read: the key's scope and the request's fingerprint.
//
// Thread-safety: pure functions.
#ifndef IDEM_GATEWAY_REQUEST_DECISION_H_
#define IDEM_GATEWAY_REQUEST_DECISION_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "gateway/gateway_config.h"
#include "idem/record.h"

namespace idem::gateway {

struct RequestView {
  std::string_view method;
  std::string_view target;             // path and query as sent
  const std::vector<Header>* headers;  // every header as sent, in order; never null
  std::string_view body;               // empty before the body is read
};

struct HeadDecision {
  enum class Kind { kPassThrough, kGuard, kReject };
  Kind kind = Kind::kPassThrough;
  const Route* route = nullptr;  // kGuard: the route guarding the request
  absl::Status error;            // kReject: InvalidArgument saying what to fix
};

// Step 1. A route whose key comes from a header is guarded when exactly one such header holds a
// valid key; a missing key passes through unless the route requires one (reject). A route whose
// key comes from the body is always guarded (the body must be read to know).
HeadDecision DecideHead(const GatewayConfig& config, const RequestView& request);

struct GuardedRequest {
  Scope scope;              // tenant and key
  std::string fingerprint;  // see idem/fingerprint.h
};

// Step 2, for a request DecideHead guarded with `route`. Returns the scope and fingerprint, or
// nullopt when the route takes the key from the body, the body holds none and the key is
// optional (the request passes through unguarded). Errors: InvalidArgument for a malformed key,
// a missing required key, a duplicate or malformed tenant header.
absl::StatusOr<std::optional<GuardedRequest>> DecideGuarded(const GatewayConfig& config,
                                                            const Route& route,
                                                            const RequestView& request);

// Returns the tenant of a request: the configured tenant header's value, else "auth:" and the
// SHA-256 of the Authorization header, else "" (the global scope). Each source has a namespace of
// its own: a header value that is empty or starts with "auth:" or "header:" gets "header:" before
// it, so no header value names a credential's scope or the global one. Errors: InvalidArgument
// when the tenant header or Authorization is sent more than once.
absl::StatusOr<std::string> TenantOf(const GatewayConfig& config,
                                     const std::vector<Header>& headers);

// Returns the values of header `name` (any case), in the order sent.
std::vector<std::string_view> HeaderValues(const std::vector<Header>& headers,
                                           std::string_view name);

// Returns `key` as a Structured Fields string ("abc", with " and \ escaped), the form forwarded
// upstream in Idempotency-Key.
std::string FormatKeyHeader(std::string_view key);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_REQUEST_DECISION_H_
