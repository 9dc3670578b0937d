// `idem fingerprint --method M --target T [--body TEXT | --body-file PATH]`: prints the request
// fingerprint idem serve computes for that request, so a service calling idem.begin in SQL
// (docs/sql.md) can store the same one and share keys with gateways.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>

#include "cli/cli_output.h"
#include "cli/commands.h"
#include "gateway/request_head.h"
#include "idem/fingerprint.h"

namespace idem::cli {
namespace {

// Exit codes: a contract (docs/sql.md); never renumber.
constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitIo = 3;

constexpr const char* kFooter = R"(Exit status:
  0  the fingerprint was printed
  2  usage error: bad flag, a target that is not a path, both --body and --body-file
  3  the body file could not be read, or the output could not be written

The fingerprint is the one idem serve stores for the request: SHA-256 (lowercase hex) over the
method, the target (its path in the spelling routes match, percent-encoded unreserved characters
decoded and dot segments removed; the query as sent) and the body, a JSON body canonicalised
(RFC 8785) first. Give it to idem.begin / idem.acquire to share keys with idem serve.

Examples:
  idem fingerprint --method POST --target /charges --body '{"amount":4200,"currency":"eur"}'
  idem fingerprint --method PUT --target '/v1/orders/17?expand=items' --body-file order.json)";

struct FingerprintFlags {
  std::string method = "POST";
  std::string target;
  std::optional<std::string> body;
  std::optional<std::string> body_file;
};

int Fail(int code, const std::string& message) {
  std::fprintf(stderr, "idem fingerprint: %s\n", message.c_str());
  return code;
}

int Run(const FingerprintFlags& f) {
  if (f.method.empty()) return Fail(kExitUsage, "--method must not be empty (e.g. POST)");
  if (!f.target.starts_with("/")) {
    return Fail(kExitUsage, fmt::format("--target '{}' must be a path starting with '/' (the "
                                        "path and query of the request, e.g. /charges?x=1)",
                                        f.target));
  }
  if (f.body && f.body_file) return Fail(kExitUsage, "give --body or --body-file, not both");
  std::string body = f.body.value_or("");
  if (f.body_file) {
    std::ifstream in(*f.body_file, std::ios::binary);
    if (!in) return Fail(kExitIo, fmt::format("cannot read --body-file '{}'", *f.body_file));
    // Read through rdbuf, not istreambuf_iterator: GCC 12 at -O2 warns (-Wnull-dereference) on
    // the iterator's inlined buffer pointers, which breaks the release build under -Werror.
    std::ostringstream text;
    text << in.rdbuf();
    body = std::move(text).str();
    if (in.bad()) return Fail(kExitIo, fmt::format("cannot read --body-file '{}'", *f.body_file));
  }
  const size_t query = f.target.find('?');
  const std::string target =
      gateway::NormalPath(std::string_view(f.target).substr(0, query)) +
      (query == std::string::npos ? std::string() : f.target.substr(query));
  const std::string line =
      Fingerprint({.method = f.method, .target = target, .body = body}) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  return OutputWritten("idem fingerprint") ? kExitOk : kExitIo;
}

}  // namespace

void AddFingerprintCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<FingerprintFlags>();
  CLI::App* cmd = app.add_subcommand(
      "fingerprint", "Print the request fingerprint idem serve computes (for idem.begin in SQL)");
  cmd->footer(kFooter);
  cmd->add_option("--method", f->method, "The request's method, as sent (default POST)");
  cmd->add_option("--target", f->target, "The path and query, e.g. /charges?x=1")->required();
  cmd->add_option("--body", f->body, "The request body (default: empty)");
  cmd->add_option("--body-file", f->body_file, "Read the body from this file, byte for byte");
  cmd->callback([f, &exit_code] { exit_code = Run(*f); });
}

}  // namespace idem::cli
