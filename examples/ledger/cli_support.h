// What idem-ledger's subcommands share: the --store and --lock-timeout flags, how a store
// failure is worded, and the check that stdout was really written.
#ifndef IDEM_EXAMPLES_LEDGER_CLI_SUPPORT_H_
#define IDEM_EXAMPLES_LEDGER_CLI_SUPPORT_H_

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "idem/clock.h"

namespace idem::ledger {

struct StoreFlags {
  std::string store;          // --store URI
  Millis lock_timeout{5000};  // --lock-timeout, default 5 s
};

// Adds --store (required) and --lock-timeout to `command`, filling `flags`.
void AddStoreFlags(CLI::App& command, StoreFlags& flags);

// Returns "cannot WHAT '<store, password hidden>': <why>", with a hint naming --lock-timeout
// when the store was busy.
std::string StoreFailure(std::string_view what, const StoreFlags& flags,
                         const absl::Status& status);

// Flushes stdout. Returns false, after saying so on stderr, when any output could not be
// written (a full disk, a closed pipe, /dev/full).
bool OutputWritten();

// Prints "idem-ledger: <message>\n" on stderr.
void PrintError(std::string_view message);

}  // namespace idem::ledger

#endif  // IDEM_EXAMPLES_LEDGER_CLI_SUPPORT_H_
