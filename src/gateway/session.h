// Internal: one client connection of `idem serve`: HTTP/1.1 requests read one after another
// (keep-alive) within the header and body timeouts, each guarded (DESIGN §3), refused, or relayed
// upstream untouched, and the answer written back.
//
// Thread-safety: runs on one io thread; `pool` belongs to that thread.
#ifndef IDEM_GATEWAY_SESSION_H_
#define IDEM_GATEWAY_SESSION_H_

#include "gateway/asio_includes.h"
#include "gateway/forward.h"
#include "gateway/gateway_context.h"

namespace idem::gateway {

// Serves `socket` until the client closes it, a timeout passes, an error makes the connection
// unusable, or the gateway drains.
asio::awaitable<void> ServeConnection(GatewayContext& ctx, UpstreamPool& pool, tcp::socket socket);

// Writes `response`, then, unless `keep_alive`, shuts the connection down gently: the rest of the
// client's request is read and dropped for a short while so that the answer is not lost to a
// reset. Returns true when the connection may carry another request.
asio::awaitable<bool> Answer(idem::http::Stream& stream, StoredResponse response,
                             unsigned version, bool keep_alive, Millis timeout);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_SESSION_H_
