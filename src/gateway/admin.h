// Internal: the admin listener of `idem serve`, never mixed into the proxied paths:
//   GET /healthz  200 while the process serves
//   GET /readyz   200 when the key store answers and the upstream accepts a connection, else 503
//   GET /metrics  Prometheus text format (see metrics.h)
//
// Thread-safety: runs on one io thread; `pool` belongs to that thread.
#ifndef IDEM_GATEWAY_ADMIN_H_
#define IDEM_GATEWAY_ADMIN_H_

#include "gateway/asio_includes.h"
#include "gateway/gateway_context.h"
#include "gateway/forward.h"

namespace idem::gateway {

// Accepts admin connections on `acceptor` until it is closed.
asio::awaitable<void> AcceptAdmin(GatewayContext& ctx, UpstreamPool& pool, tcp::acceptor& acceptor);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_ADMIN_H_
