// idem-ledger: a ledger of accounts changed only by keyed transfers, each applied at most once
// through idem's run-once guard. main() wires the subcommands together and nothing else.
#include <cstdio>
#include <exception>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "idem-ledger applies keyed transfers to a ledger exactly once, however often the "
      "same file is applied.",
      "idem-ledger"};
  app.require_subcommand(1);
  int exit_code = idem::ledger::kExitOk;
  idem::ledger::AddApplyCommand(app, exit_code);
  idem::ledger::AddBalancesCommand(app, exit_code);
  idem::ledger::AddGenerateCommand(app, exit_code);
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
