// The `idem` program: wires the subcommands together and nothing else.
#include <cstdio>
#include <exception>
#include <string>

#include "cli/commands.h"
#include "idem/version.h"

namespace {

// `idem help SUBCOMMAND` prints that subcommand's help, like `idem SUBCOMMAND --help`.
void AddHelpCommand(CLI::App& app, int& exit_code) {
  auto* help = app.add_subcommand("help", "Show help for idem or one of its subcommands");
  auto topic = std::make_shared<std::string>();
  help->add_option("subcommand", *topic, "The subcommand to explain");
  help->callback([&app, &exit_code, topic] {
    if (topic->empty()) {
      std::fputs(app.help().c_str(), stdout);
      exit_code = 0;
      return;
    }
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->get_name() == *topic) {
        std::fputs(sub->help(app.get_name()).c_str(), stdout);  // "Usage: idem SUB ..."
        exit_code = 0;
        return;
      }
    }
    std::fprintf(stderr, "idem: no subcommand named '%s'; run 'idem --help' for the list\n",
                 topic->c_str());
    exit_code = 2;
  });
}

// The first word that is not an option names the subcommand (idem's own options take no value).
// Returns that word when no subcommand has that name, else an empty string. CLI11 would let
// `idem bogus --help` print the top-level help and exit 0; an unknown subcommand is a usage
// error however it is asked.
std::string UnknownSubcommand(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return "";
    if (word.starts_with("-")) continue;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (sub->check_name(word)) return "";
    }
    return word;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"idem makes retries safe: the same operation, arriving once or fifty times, has its "
               "effect once and every arrival gets the same answer.",
               "idem"};
  app.set_version_flag("--version", std::string("idem ") + IDEM_VERSION);
  app.require_subcommand(1);
  app.footer("Run 'idem help SUBCOMMAND' (or 'idem SUBCOMMAND --help') for its options, examples "
             "and exit status.");
  int exit_code = 0;
  AddHelpCommand(app, exit_code);
  idem::cli::AddCallCommand(app, exit_code);
  idem::cli::AddSimCommand(app, exit_code);
  if (const std::string unknown = UnknownSubcommand(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "idem: no subcommand named '%s'; run 'idem --help' for the list\n",
                 unknown.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0; every bad command line exits 2, the usual code for usage errors.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "idem: %s\n", e.what());
    return 70;
  }
  return exit_code;
}
