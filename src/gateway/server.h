// Internal: the running `idem serve`: the proxy listener, one io thread per core (each with its
// own keep-alive pool of upstream connections), and the admin listener (/healthz, /readyz,
// /metrics) on its own address.
//
// Thread-safety: Start and Shutdown are called by one controlling thread (never an io thread).
#ifndef IDEM_GATEWAY_SERVER_H_
#define IDEM_GATEWAY_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "gateway/gateway_config.h"
#include "gateway/key_service.h"
#include "gateway/metrics.h"
#include "idem/store.h"

namespace idem::gateway {

class Server {
 public:
  Server() = default;
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  virtual ~Server() = default;

  // The addresses actually bound (HOST:PORT; useful with port 0). admin_address is empty when
  // there is no admin listener.
  virtual std::string listen_address() const = 0;
  virtual std::string admin_address() const = 0;

  // Stops accepting connections and reading new requests on every open connection, lets
  // requests in flight finish and pending outcomes be recorded for at most `drain`, then stops
  // the io threads and the key service. A key whose request may have reached the upstream is
  // never released: its lease is left to lapse (no retry runs it while it may still run); a key
  // whose transient outcome was not yet released is released (with its fence, straight on
  // `store`). Outcomes still unrecorded are logged by key and counted
  // (metrics.outcomes_abandoned). Idempotent.
  virtual void Shutdown(Millis drain) = 0;

  // Swaps the routes and require_key for those of `next` (which must have passed
  // ValidateConfig): requests read after the call are decided by them; requests already read
  // finish under the routes they started with. Errors: FailedPrecondition naming every other
  // setting `next` changes (only a restart applies them); nothing is swapped then.
  // Thread-safety: may be called from any thread while the server runs.
  virtual absl::Status Reload(const GatewayConfig& next) = 0;
};

// Binds the listeners and starts the io threads. `config` must have passed ValidateConfig.
// REQUIRES: config, store, keys and metrics outlive the server.
// Errors: InvalidArgument for a listen or admin address that is not HOST:PORT, or an upstream
// URL that is not http://HOST:PORT[/prefix]; Unavailable when an address cannot be bound or the
// upstream host name does not resolve.
absl::StatusOr<std::unique_ptr<Server>> StartServer(const GatewayConfig& config, Store& store,
                                                    KeyService& keys, Metrics& metrics);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_SERVER_H_
