#include "cli/service_notify.h"

#include <fmt/format.h>
#include <systemd/sd-daemon.h>

#include <string>

namespace idem::cli {

void NotifyReady(std::string_view status) {
  sd_notify(0, fmt::format("READY=1\nSTATUS={}", status).c_str());
}

void NotifyStopping(std::string_view status) {
  sd_notify(0, fmt::format("STOPPING=1\nSTATUS={}", status).c_str());
}

}  // namespace idem::cli
