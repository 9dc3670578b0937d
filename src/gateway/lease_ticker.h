// Internal: the gateway-wide heartbeat. Every third of the lease, one ticker submits a heartbeat
// for every key this process holds (InFlight), all at once, so they share a group commit instead
// of each key running its own timer; each OK result moves that key's known lease end
// (InFlight::RenewKey), which the key's upstream call watches (it is cancelled before the lease
// lapses without renewal).
//
// Thread-safety: runs on one io thread; the results come back on it.
#ifndef IDEM_GATEWAY_LEASE_TICKER_H_
#define IDEM_GATEWAY_LEASE_TICKER_H_

#include "gateway/asio_includes.h"
#include "gateway/gateway_context.h"

namespace idem::gateway {

// Ticks until its io_context stops.
asio::awaitable<void> RunLeaseTicker(GatewayContext& ctx);

// Submits one heartbeat for each key held and still renewed (running, or its outcome pending;
// not while its outcome is being written, nor once lost); returns how many. A heartbeat that
// finds the fence moved while the key's upstream call runs cancels that call.
size_t BeatAll(GatewayContext& ctx, const asio::any_io_executor& executor);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_LEASE_TICKER_H_
