// idem-ledger: a ledger of accounts changed only by keyed transfers, each applied at most once
// through idem's run-once guard. main() wires the subcommands together and nothing else.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "commands.h"
#include "idem/version.h"

namespace {

// CLI11 would take an unknown first word for a stray argument ("A subcommand is required"), and
// an unknown word followed by --help for a request for the main help (exit 0). Returns false,
// after naming it, when argv[1] is a word that is no subcommand.
bool FirstWordIsASubcommand(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-') return true;
  const std::string_view word = argv[1];
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == word) return true;
  }
  std::fprintf(stderr,
               "idem-ledger: unknown subcommand '%s'; the subcommands are apply, balances and "
               "generate (run 'idem-ledger --help')\n",
               argv[1]);
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "idem-ledger applies keyed transfers to a ledger exactly once, however often the "
      "same file is applied.",
      "idem-ledger"};
  app.set_version_flag("--version", std::string("idem-ledger ") + IDEM_VERSION);
  app.require_subcommand(1);
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("idem-ledger: ") + e.what() + "\nRun 'idem-ledger --help' for usage.\n";
  });
  int exit_code = idem::ledger::kExitOk;
  idem::ledger::AddApplyCommand(app, exit_code);
  idem::ledger::AddBalancesCommand(app, exit_code);
  idem::ledger::AddGenerateCommand(app, exit_code);
  if (!FirstWordIsASubcommand(app, argc, argv)) return idem::ledger::kExitFailed;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 2, as documented in commands.h.
    return app.exit(e) == 0 ? idem::ledger::kExitOk : idem::ledger::kExitFailed;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "idem-ledger: %s\n", e.what());
    return idem::ledger::kExitFailed;
  }
  return exit_code;
}
