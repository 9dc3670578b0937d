// The subcommands of idem-ledger; main.cc wires them into one CLI11 app.
//
// Each Add*Command registers its subcommand on `app`; when the subcommand runs, its callback
// stores the process exit code in `exit_code`:
//   0  everything asked for was done (apply: every line applied or replayed)
//   1  apply: at least one line was rejected (bad line, declined, key reused); the rest applied
//   2  the run could not be done or finished: bad flags, store unreachable, store failure
#ifndef IDEM_EXAMPLES_LEDGER_COMMANDS_H_
#define IDEM_EXAMPLES_LEDGER_COMMANDS_H_

#include <CLI/CLI.hpp>

namespace idem::ledger {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRejected = 1;
inline constexpr int kExitFailed = 2;

void AddApplyCommand(CLI::App& app, int& exit_code);
void AddBalancesCommand(CLI::App& app, int& exit_code);
void AddGenerateCommand(CLI::App& app, int& exit_code);

}  // namespace idem::ledger

#endif  // IDEM_EXAMPLES_LEDGER_COMMANDS_H_
