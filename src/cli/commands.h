// The subcommands of the `idem` program, one file each; main.cc only wires them.
#ifndef IDEM_CLI_COMMANDS_H_
#define IDEM_CLI_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace idem::cli {

// Each Add*Command registers one subcommand on `app`. When that subcommand runs, its callback
// stores the process exit code in `exit_code`; callbacks never let an exception escape except
// CLI11's own parse errors.
void AddCallCommand(CLI::App& app, int& exit_code);
void AddSimCommand(CLI::App& app, int& exit_code);

}  // namespace idem::cli

#endif  // IDEM_CLI_COMMANDS_H_
