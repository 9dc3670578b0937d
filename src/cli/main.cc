// The `idem` program: wires the subcommands together and nothing else.
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_output.h"
#include "cli/commands.h"
#include "idem/version.h"

namespace {

// Returns the subcommand of `parent` named `name`, or null.
const CLI::App* FindSubcommand(const CLI::App& parent, const std::string& name) {
  for (const CLI::App* sub : parent.get_subcommands({})) {
    if (sub->get_name() == name) return sub;
  }
  return nullptr;
}

// `idem help SUBCOMMAND [SUBCOMMAND...]` prints that (sub)subcommand's help, like
// `idem sim backoff --help`.
void AddHelpCommand(CLI::App& app, int& exit_code) {
  auto* help = app.add_subcommand("help", "Show help for idem or one of its subcommands");
  auto topic = std::make_shared<std::vector<std::string>>();
  help->add_option("subcommand", *topic, "The subcommand to explain, e.g. call or sim backoff");
  help->callback([&app, &exit_code, topic] {
    const CLI::App* current = &app;
    std::string path;  // the names above `current`: "idem sim" for the help of "backoff"
    for (const std::string& word : *topic) {
      const CLI::App* sub = FindSubcommand(*current, word);
      const std::string full =
          path.empty() ? current->get_name() : path + " " + current->get_name();
      if (sub == nullptr) {
        std::fprintf(stderr,
                     "idem: '%s' has no subcommand named '%s'; run '%s --help' for the list\n",
                     full.c_str(), word.c_str(), full.c_str());
        exit_code = 2;
        return;
      }
      path = full;
      current = sub;
    }
    std::fputs(current->help(path).c_str(), stdout);  // "Usage: idem sim backoff ..."
    exit_code = idem::cli::OutputWritten("idem") ? 0 : 1;
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
  CLI::App app{
      "idem makes retries safe: the same operation, arriving once or fifty times, has its "
      "effect once and every arrival gets the same answer.",
      "idem"};
  app.set_version_flag("--version", std::string("idem ") + IDEM_VERSION);
  app.require_subcommand(1);
  // CLI11's own messages ("The following argument was not expected: --bogus") get the program's
  // name, as every other message of idem has.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("idem: ") + e.what() +
           "\nRun 'idem --help' (or 'idem help SUBCOMMAND') for usage.\n";
  });
  app.footer(
      "Run 'idem help SUBCOMMAND' (or 'idem SUBCOMMAND --help') for its options, examples "
      "and exit status.");
  int exit_code = 0;
  AddHelpCommand(app, exit_code);
  idem::cli::AddCallCommand(app, exit_code);
  idem::cli::AddServeCommand(app, exit_code);
  idem::cli::AddSimCommand(app, exit_code);
  idem::cli::AddKeysCommand(app, exit_code);
  idem::cli::AddOutboxCommand(app, exit_code);
  idem::cli::AddRelayCommand(app, exit_code);
  idem::cli::AddCheckCommand(app, exit_code);
  idem::cli::AddFingerprintCommand(app, exit_code);
  idem::cli::AddCompletionCommand(app, exit_code);
  if (const std::string unknown = UnknownSubcommand(app, argc, argv); !unknown.empty()) {
    std::fprintf(stderr, "idem: no subcommand named '%s'; run 'idem --help' for the list\n",
                 unknown.c_str());
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::RequiredError& e) {
    // CLI11 checks what is required before what is unknown: `idem call --bogus` would say "url
    // is required" and hide the real mistake. Name the unknown arguments first.
    if (const std::vector<std::string> unknown = app.remaining(true); !unknown.empty()) {
      return app.exit(CLI::ExtrasError(unknown)) == 0 ? 0 : 2;
    }
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0; every bad command line exits 2, the usual code for usage errors.
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "idem: %s\n", e.what());
    return 70;
  }
  return exit_code;
}
