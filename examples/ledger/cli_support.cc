#include "cli_support.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "idem/retry/duration.h"
#include "idem/store.h"

namespace idem::ledger {

void AddStoreFlags(CLI::App& command, StoreFlags& flags) {
  command
      .add_option("--store", flags.store,
                  "Store URI: sqlite:PATH (sqlite:///relative or sqlite:////absolute also work) "
                  "or postgresql://...")
      ->required();
  command
      .add_option_function<std::string>(
          "--lock-timeout",
          [&flags](const std::string& text) {
            absl::StatusOr<Millis> parsed = retry::ParseDuration(text);
            if (!parsed.ok()) {
              throw CLI::ValidationError("--lock-timeout", std::string(parsed.status().message()));
            }
            flags.lock_timeout = *parsed;
          },
          "How long to wait for a store locked by another process, at open and at every "
          "transfer, e.g. 500ms, 30s (default 5s)")
      ->type_name("DURATION");
}

std::string StoreFailure(std::string_view what, const StoreFlags& flags,
                         const absl::Status& status) {
  std::string message = fmt::format("cannot {} '{}': {}", what, RedactStoreUri(flags.store),
                                    std::string(status.message()));
  if (absl::IsUnavailable(status)) {
    message += fmt::format(" (waited up to --lock-timeout {}; give a longer one to wait longer)",
                           retry::FormatDuration(flags.lock_timeout));
  }
  return message;
}

bool OutputWritten() {
  errno = 0;
  if (std::fflush(stdout) == 0 && std::ferror(stdout) == 0) return true;
  const int error = errno != 0 ? errno : EIO;
  PrintError(fmt::format("cannot write the output: {}", std::strerror(error)));
  return false;
}

void PrintError(std::string_view message) {
  std::fputs(fmt::format("idem-ledger: {}\n", message).c_str(), stderr);
}

}  // namespace idem::ledger
