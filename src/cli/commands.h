// The subcommands of the `idem` program, one file each; main.cc only wires them.
#ifndef IDEM_CLI_COMMANDS_H_
#define IDEM_CLI_COMMANDS_H_

// GCC 12 at -O2 reports a false "potential null pointer dereference" inside CLI11's string
// helpers (CLI::detail::split), which -Werror turns into a failed release build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <CLI/CLI.hpp>
#pragma GCC diagnostic pop

namespace idem::cli {

// Each Add*Command registers one subcommand on `app`. When that subcommand runs, its callback
// stores the process exit code in `exit_code`; callbacks never let an exception escape except
// CLI11's own parse errors.
void AddCallCommand(CLI::App& app, int& exit_code);
void AddSimCommand(CLI::App& app, int& exit_code);
void AddServeCommand(CLI::App& app, int& exit_code);
void AddKeysCommand(CLI::App& app, int& exit_code);
void AddOutboxCommand(CLI::App& app, int& exit_code);
void AddRelayCommand(CLI::App& app, int& exit_code);
void AddCheckCommand(CLI::App& app, int& exit_code);
void AddFingerprintCommand(CLI::App& app, int& exit_code);
// `idem completion bash`: hidden; prints a completion script built from `app`, which must
// outlive the parse.
void AddCompletionCommand(CLI::App& app, int& exit_code);

}  // namespace idem::cli

#endif  // IDEM_CLI_COMMANDS_H_
