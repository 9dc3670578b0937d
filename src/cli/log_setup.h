// How the long-running subcommands (idem serve, idem relay) log: the same flags (--log-format,
// --log-level) and config file settings (log_format, log_level), one set of level names, JSON
// lines for log shippers, and journald's priority prefixes (docs/operations.md, "Logs").
//
// Thread-safety: SetUpLogging is called once, before the command starts any thread that logs.
#ifndef IDEM_CLI_LOG_SETUP_H_
#define IDEM_CLI_LOG_SETUP_H_

#include <spdlog/common.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "cli/commands.h"

namespace idem::cli {

struct LogSettings {
  std::string format = "text";  // text or json
  std::string level = "info";   // LogLevelNames(); "warn" is read as "warning"
};

// The level names the flags and files accept, as logged: trace, debug, info, warning, error,
// critical, off. "warn" (and spdlog's "err") are accepted on input too and mean the same.
inline constexpr std::string_view kLogLevelHelp =
    "trace, debug, info, warning (or warn), error, critical, off (info)";

// Returns the level `name` names. Errors: InvalidArgument listing the names.
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(std::string_view name);

// Adds --log-format and --log-level to `cmd`, writing into `settings`; the given ones are those
// cmd.count() reports.
void AddLogFlags(CLI::App& cmd, LogSettings& settings);

// Returns the sd-daemon(3) priority of `level`: <7> debug (and trace), <6> info, <4> warning,
// <3> error, <2> critical.
int JournalPriority(spdlog::level::level_enum level);

// Whether stderr is the journal's stream: JOURNAL_STREAM (set by systemd for a unit whose output
// goes to the journal) names stderr's device and inode (systemd.exec(5)).
bool StderrIsJournal();

// Makes the default logger write to stderr from a thread of its own, as `settings` says; each
// line starts with its <N> priority when StderrIsJournal(). Sets gateway::SetLogFormat too.
// `settings` must be valid (ParseLogLevel and format text or json).
void SetUpLogging(const LogSettings& settings);

// Sets the level of the logger SetUpLogging made (a config file's log_level, read later).
void SetLogLevel(spdlog::level::level_enum level);

}  // namespace idem::cli

#endif  // IDEM_CLI_LOG_SETUP_H_
