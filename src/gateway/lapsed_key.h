// Internal: what the new holder of a key whose earlier holder's lease lapsed may do on its route,
// decided in one place for whoever takes the key over: a client's retry, a waiting duplicate
// (in_flight = "wait") or the completer. On a `status` route a lapsed key is only ever settled by
// asking the status URL, since its upstream does not deduplicate and the earlier holder's request
// may have run; anywhere else the new holder sends the request again under the same key.
//
// Thread-safety: pure functions.
#ifndef IDEM_GATEWAY_LAPSED_KEY_H_
#define IDEM_GATEWAY_LAPSED_KEY_H_

#include <string>
#include <string_view>

#include "gateway/asio_includes.h"
#include "gateway/gateway_config.h"
#include "gateway/recovery_note.h"

namespace idem::gateway {

enum class LapsedKeyAction {
  kResend,     // send the request again with the same Idempotency-Key
  kAskStatus,  // GET the route's status URL; never send the request itself
};

// What the holder that took a lapsed key over may do on `route`: kAskStatus on a route with
// recover = "status", kResend on any other (recover = "resend" or "off").
LapsedKeyAction ActionOnLapsedKey(const Route& route);

// The request that asks `route`'s upstream whether the effect of `key` happened: a GET of
// route.status_url with {key} replaced by the percent-encoded key, the headers of `note` but its
// body's (Content-*) and Idempotency-Key, and Idempotency-Key: "KEY".
http::request<http::string_body> StatusRequest(const Route& route, const RecoveryNote& note,
                                               const std::string& key);

// Returns `key` percent-encoded for a URL path: every byte but RFC 3986's unreserved ones
// (A-Z a-z 0-9 - . _ ~) as %XX.
std::string PercentEncode(std::string_view key);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_LAPSED_KEY_H_
