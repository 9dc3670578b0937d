// Internal: what every io thread of `idem serve` shares: the settings, the key store's async door,
// the replay cache, the metrics and the record of what is in flight.
//
// Thread-safety: the referenced objects are thread-safe (or immutable, for the settings).
#ifndef IDEM_GATEWAY_GATEWAY_CONTEXT_H_
#define IDEM_GATEWAY_GATEWAY_CONTEXT_H_

#include <atomic>
#include <string>

#include "gateway/asio_includes.h"
#include "gateway/gateway_config.h"
#include "gateway/in_flight.h"
#include "gateway/key_service.h"
#include "gateway/metrics.h"
#include "gateway/replay_cache.h"

namespace idem::gateway {

struct GatewayContext {
  const GatewayConfig& config;
  KeyService& keys;
  ReplayCache& cache;
  Metrics& metrics;
  InFlight& in_flight;
  std::string owner;                  // this process's lease owner name
  std::atomic<bool> draining{false};  // SIGTERM: answer what is running, then close connections
};

// Runs `op` on the key service and resumes on the calling coroutine's executor with its result.
// Records the time it took in metrics.store_seconds.
asio::awaitable<KeyOpResult> AwaitKeyOp(GatewayContext& ctx, KeyOp op);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_GATEWAY_CONTEXT_H_
