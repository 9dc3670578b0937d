// What idem serve and idem relay tell a service manager: systemd's notification protocol
// (sd_notify(3), for units of Type=notify; docs/operations.md), and what a SIGHUP does.
//
// Thread-safety: every function may be called from any thread.
#ifndef IDEM_CLI_SERVICE_NOTIFY_H_
#define IDEM_CLI_SERVICE_NOTIFY_H_

#include <string_view>

namespace idem::cli {

// Tells systemd the service is ready (READY=1) with a one-line STATUS. Call it once the store is
// open and every listener bound. Outside systemd (no NOTIFY_SOCKET) it does nothing.
void NotifyReady(std::string_view status);

// Tells systemd the service is stopping (STOPPING=1), with a one-line STATUS.
void NotifyStopping(std::string_view status);

// What idem relay says when a SIGHUP arrives (systemctl reload): its settings are its command
// line, so there is nothing to re-read; SIGHUP does not end it. (idem serve re-reads its config.)
inline constexpr std::string_view kRelaySighupNotice =
    "SIGHUP: nothing to reload: idem relay takes its settings from its command line only "
    "(restart it to change them)";

}  // namespace idem::cli

#endif  // IDEM_CLI_SERVICE_NOTIFY_H_
