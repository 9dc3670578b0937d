// Internal: the fields that speak of one connection rather than of the message (RFC 9110 §7.6.1):
// the gateway reads them for its own side and never passes them from the client to the upstream
// or back.
#ifndef IDEM_GATEWAY_HOP_BY_HOP_H_
#define IDEM_GATEWAY_HOP_BY_HOP_H_

#include <string>
#include <vector>

#include "gateway/asio_includes.h"

namespace idem::gateway {

// Whether `f` is one of the standard hop-by-hop fields, or a framing field the gateway writes
// afresh (Content-Length, Transfer-Encoding) when it stores or replays an answer.
bool HopByHop(http::field f);

// The fields `fields`' Connection header names as its connection's own, but its options close
// and keep-alive, which are no fields. Empty for nearly every message.
std::vector<std::string> ConnectionNamedFields(const http::fields& fields);

// Drops the client's hop-by-hop fields from a request before it is decided on and forwarded:
// Connection keeps only close and keep-alive (the gateway reads them for the client's connection
// and writes its own upstream); the fields it names go, but the body's framing and Host, which
// the gateway reads itself; Keep-Alive, TE, Upgrade and Proxy-Connection go.
void DropClientHopByHopFields(http::request_header<>& h);

// Drops an upstream answer's hop-by-hop fields before it is relayed: they speak of the upstream's
// connection to the gateway (Keep-Alive: timeout=5), not of the client's. The body's framing
// stays (the answer is relayed with it); Connection is written afresh for the client.
void DropUpstreamHopByHopFields(http::fields& fields);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_HOP_BY_HOP_H_
