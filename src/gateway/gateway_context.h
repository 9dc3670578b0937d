// Internal: what every io thread of `idem serve` shares: the settings, the key store's async door,
// the replay cache, the metrics and the record of what is in flight.
//
// Thread-safety: the referenced objects are thread-safe (or immutable, for the settings).
#ifndef IDEM_GATEWAY_GATEWAY_CONTEXT_H_
#define IDEM_GATEWAY_GATEWAY_CONTEXT_H_

#include <atomic>
#include <memory>
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
  // The settings requests are decided by (routes, require_key): config's at start, swapped whole
  // by a reload (Server::Reload). A request loads it once and keeps that snapshot to its end.
  std::atomic<std::shared_ptr<const GatewayConfig>> rules;
  KeyService& keys;
  ReplayCache& cache;
  Metrics& metrics;
  InFlight& in_flight;
  std::string owner;                  // this process's lease owner name
  std::atomic<bool> draining{false};  // SIGTERM: answer what is running, then close connections
  // The last store write answered Unavailable (the store is down, restarting or locked);
  // cleared by the next write the store answers. /readyz reports it.
  std::atomic<bool> store_unreachable{false};
};

// Notes whether the store answered a write (`status` is that write's): any status but
// Unavailable says it did.
inline void NoteStoreStatus(GatewayContext& ctx, const absl::Status& status) {
  const bool unreachable = absl::IsUnavailable(status);
  // Read first: on the usual path nothing changes, and no cache line is written.
  if (ctx.store_unreachable.load(std::memory_order_relaxed) != unreachable)
    ctx.store_unreachable.store(unreachable, std::memory_order_relaxed);
}

// Runs `op` on the key service and resumes on the calling coroutine's executor with its result.
// Records the time it took in metrics.store_seconds, and a write's status in
// ctx.store_unreachable.
asio::awaitable<KeyOpResult> AwaitKeyOp(GatewayContext& ctx, KeyOp op);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_GATEWAY_CONTEXT_H_
