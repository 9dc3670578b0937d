#include "cli/commands.h"

namespace idem::cli {
void AddCallCommand(CLI::App& app, int& exit_code) {
  auto* call = app.add_subcommand("call", "Send an HTTP request, retrying it safely (not built yet)");
  call->callback([&exit_code] { exit_code = 1; });
}
}  // namespace idem::cli
