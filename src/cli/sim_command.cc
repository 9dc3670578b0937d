#include "cli/commands.h"

namespace idem::cli {
void AddSimCommand(CLI::App& app, int& exit_code) {
  auto* sim = app.add_subcommand("sim", "Simulate retry strategies (not built yet)");
  sim->callback([&exit_code] { exit_code = 1; });
}
}  // namespace idem::cli
