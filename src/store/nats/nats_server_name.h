// Which NATS server listens at a client URL: its name (the `server_name` of its configuration,
// which JetStream's stream info gives as a stream's leader), read from the INFO line every NATS
// server sends first on a new connection, before any authentication. libnats keeps the connected
// server's ID but not its name, and a server's ID changes at each start while its name does not.
//
// Thread-safety: pure functions.
#ifndef IDEM_STORE_NATS_NATS_SERVER_NAME_H_
#define IDEM_STORE_NATS_NATS_SERVER_NAME_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::nats {

// "HOST:PORT" of a libnats URL ("nats://[user:password@]HOST:PORT", or HOST:PORT already).
std::string HostPort(std::string_view url);

// The `server_name` of a server's INFO line ("INFO {...}"), or nullopt when it has none.
std::optional<std::string> ServerNameOfInfo(std::string_view info);

// Connects to `host_port` (HOST:PORT, [V6]:PORT), reads the INFO line and closes. Each step waits
// at most `timeout`. Errors: Unavailable (no connection, no INFO line in time); NotFound for a
// server without a name.
absl::StatusOr<std::string> ProbeServerName(std::string_view host_port, Millis timeout);

}  // namespace idem::nats

#endif  // IDEM_STORE_NATS_NATS_SERVER_NAME_H_
