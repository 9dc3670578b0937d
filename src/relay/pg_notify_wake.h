// Wakes a PostgreSQL relay within milliseconds of a commit that added outbox messages: its own
// libpq connection LISTENs on the channel that migration 0003's trigger notifies ("idem_outbox";
// a notification is delivered at commit, never for a rolled-back transaction).
//
// A notification that arrives while no Wait runs (the relay is publishing) stays on the
// connection's socket and ends the next Wait at once (WakeSource's level-triggered contract).
//
// Polling stays the fallback: Wait never waits longer than it is told, so a lost notification
// (or a lost connection) costs at most one poll interval. A lost connection is re-established
// at a later Wait, with backoff; the Wait that re-establishes it returns at once, since
// notifications sent meanwhile are gone.
//
// Thread-safety: Wait on one thread (the relay's); Interrupt from any thread.
#ifndef IDEM_RELAY_PG_NOTIFY_WAKE_H_
#define IDEM_RELAY_PG_NOTIFY_WAKE_H_

#include <libpq-fe.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "relay/wake_source.h"

namespace idem::relay {

inline constexpr char kOutboxChannel[] = "idem_outbox";

struct PgNotifyWakeOptions {
  std::string conninfo;                                // the store's URI or key=value conninfo
  std::string channel = kOutboxChannel;                // an identifier, LISTENed to as given
  std::string application_name = "idem-relay-listen";  // shown in pg_stat_activity
  int connect_timeout_s = 5;                           // unless the conninfo sets its own
};

class PgNotifyWake final : public WakeSource {
 public:
  // Connects and LISTENs before returning, so a commit after Create returns wakes the next Wait.
  // Errors: Unavailable when the server cannot be reached or refuses the LISTEN (the message
  // names neither password nor secret); Internal when no eventfd can be made.
  static absl::StatusOr<std::unique_ptr<PgNotifyWake>> Create(PgNotifyWakeOptions options);
  ~PgNotifyWake() override;
  PgNotifyWake(const PgNotifyWake&) = delete;
  PgNotifyWake& operator=(const PgNotifyWake&) = delete;

  void Wait(Millis wait) override;
  void Interrupt() override;

  // true while the LISTEN connection is up (for tests and metrics).
  bool listening() const { return conn_ != nullptr; }
  // How many times a lost connection was re-established.
  int reconnects() const { return reconnects_; }

 private:
  PgNotifyWake(PgNotifyWakeOptions options, int event_fd)
      : options_(std::move(options)), event_fd_(event_fd) {}
  absl::Status Connect();
  void Disconnect();
  // Reads what the server sent; true when a notification was among it. Disconnects on failure.
  bool DrainNotifications();
  // Waits for the eventfd or the connection's socket, up to `timeout_ms`; true on Interrupt.
  bool PollOnce(int timeout_ms, bool* socket_ready);

  PgNotifyWakeOptions options_;
  int event_fd_;
  PGconn* conn_ = nullptr;
  std::chrono::steady_clock::time_point next_connect_{};
  Millis reconnect_backoff_{250};
  int reconnects_ = 0;
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_PG_NOTIFY_WAKE_H_
