// What `idem relay --admin ADDR` answers (docs/outbox.md, "Metrics"):
//   GET /healthz  200 "ok" while the relay runs
//   GET /metrics  the relay's counters in Prometheus text format (relay_metrics.h)
//   anything else 404
//
// Thread-safety: the handler reads only atomics; it runs on the admin server's thread.
#ifndef IDEM_RELAY_RELAY_ADMIN_H_
#define IDEM_RELAY_RELAY_ADMIN_H_

#include "http/admin_server.h"
#include "relay/relay_metrics.h"

namespace idem::relay {

// REQUIRES: `metrics` outlives every server the handler is given to.
http::AdminHandler RelayAdminHandler(const RelayMetrics& metrics);

}  // namespace idem::relay

#endif  // IDEM_RELAY_RELAY_ADMIN_H_
