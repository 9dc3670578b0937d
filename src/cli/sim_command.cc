// `idem sim`: simulations that show why retries need backoff, jitter and containment.
//   idem sim backoff   the contention study (writes and completion time per strategy)
//   idem sim amplify   how retries multiply through a stack of layers
// Bad flags are rejected by CLI11 validators (exit 2); a file or an output that cannot be
// written exits 1.
#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_output.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "idem/clock.h"
#include "sim/amplify.h"
#include "sim/amplify_report.h"
#include "sim/backoff_chart.h"
#include "sim/backoff_report.h"
#include "sim/backoff_study.h"
#include "sim/study_progress.h"

namespace idem::cli {
namespace {

struct BackoffArgs {
  std::string clients = "10,20,30,40,50,60,70,80,90,100";
  std::vector<std::string> strategies = {"none", "exponential", "full", "equal", "decorrelated"};
  int runs = 100;
  std::uint64_t seed = 1;
  int base_ms = 5;
  int cap_ms = 2000;
  std::string format = "table";
  std::string svg;
  bool progress = false;
};

// Parses "10,50,100" into client counts; on error returns what to fix. CLI11's own list
// splitting would drop empty elements ("10,,50") silently, so the list is parsed here.
std::string ParseClientList(const std::string& text, std::vector<int>& clients) {
  clients.clear();
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, comma - start);
    int value = 0;
    const auto [rest, error] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (error != std::errc() || rest != item.data() + item.size() || value < 1 || value > 10000) {
      return "each client count must be a whole number from 1 to 10000, got '" + item +
             "' (example: --clients 10,50,100)";
    }
    clients.push_back(value);
    if (comma == text.size()) return "";
    start = comma + 1;
  }
}

CLI::Validator ClientList() {
  return CLI::Validator(
      [](std::string& text) {
        std::vector<int> ignored;
        return ParseClientList(text, ignored);
      },
      "LIST", "ClientList");
}

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

int RunBackoff(const BackoffArgs& args) {
  sim::StudyConfig config;
  if (const std::string error = ParseClientList(args.clients, config.clients); !error.empty()) {
    std::fprintf(stderr, "idem sim backoff: %s\n", error.c_str());
    return 2;
  }
  for (const std::string& name : args.strategies) {
    absl::StatusOr<sim::Strategy> strategy = sim::ParseStrategy(name);
    if (!strategy.ok()) {
      std::fprintf(stderr, "idem sim backoff: %s\n",
                   std::string(strategy.status().message()).c_str());
      return 2;
    }
    config.strategies.push_back(*strategy);
  }
  config.runs = args.runs;
  config.seed = args.seed;
  config.backoff =
      sim::BackoffParams{static_cast<double>(args.base_ms), static_cast<double>(args.cap_ms)};
  // A study can be asked to run for days: past a few seconds, progress and an estimate go to
  // stderr, and a warning when the estimate is long.
  sim::StudyProgress progress(
      "idem sim backoff",
      {.always = args.progress, .what = "work", .shorten_hint = "lower --runs or --clients"},
      SystemClock(), [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); });
  config.progress = [&progress](int64_t done, int64_t total) { progress.Update(done, total); };
  absl::StatusOr<std::vector<sim::StudyRow>> rows = sim::RunBackoffStudy(config);
  progress.Finish();
  if (!rows.ok()) {
    std::fprintf(stderr, "idem sim backoff: %s\n", std::string(rows.status().message()).c_str());
    return 2;
  }
  std::string text;
  if (args.format == "json") {
    text = sim::FormatStudyJson(*rows);
  } else if (args.format == "csv") {
    text = sim::FormatStudyCsv(*rows);
  } else {
    text = sim::FormatStudyTable(*rows, args.runs);
  }
  std::fputs(text.c_str(), stdout);
  if (!OutputWritten("idem sim backoff")) return 1;
  if (!args.svg.empty() && !WriteFile(args.svg, sim::RenderStudySvg(*rows, args.runs))) {
    std::fprintf(stderr, "idem sim backoff: cannot write the chart to '%s'; check the path\n",
                 args.svg.c_str());
    return 1;
  }
  return 0;
}

void AddBackoffCommand(CLI::App& sim, int& exit_code) {
  auto* cmd = sim.add_subcommand(
      "backoff",
      "Simulate N clients updating one row under optimistic concurrency with each backoff "
      "strategy; report writes made and time until the last client succeeds");
  auto args = std::make_shared<BackoffArgs>();
  cmd->add_option("--clients", args->clients, "Client counts to simulate, comma-separated")
      ->check(ClientList())
      ->capture_default_str();
  cmd->add_option("--runs", args->runs, "Seeded runs averaged per strategy and client count")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--seed", args->seed, "Seed of the whole study")
      ->check(Uint64Flag())
      ->capture_default_str();
  cmd->add_option("--strategies", args->strategies, "Strategies to compare, comma-separated")
      ->delimiter(',')
      ->check(CLI::IsMember({"none", "exponential", "full", "equal", "decorrelated"}))
      ->capture_default_str();
  cmd->add_option("--base-ms", args->base_ms, "Backoff base in milliseconds")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd->add_option("--cap-ms", args->cap_ms, "Backoff cap in milliseconds (at least the base)")
      ->check(CLI::Range(1, 3600000))
      ->capture_default_str();
  cmd->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->capture_default_str();
  cmd->add_option("--svg", args->svg, "Also write a chart of both metrics to this SVG file");
  cmd->add_flag("--progress", args->progress,
                "Report progress on stderr from the start (by default only runs longer than 2s "
                "do, and a run estimated beyond 10 minutes is warned about)");
  cmd->callback([args, &exit_code] { exit_code = RunBackoff(*args); });
}

struct AmplifyArgs {
  sim::AmplifyConfig config;
  std::string format = "table";
};

int RunAmplify(const AmplifyArgs& args) {
  absl::StatusOr<std::vector<sim::AmplifyRow>> rows = sim::SimulateAmplification(args.config);
  if (!rows.ok()) {
    std::fprintf(stderr, "idem sim amplify: %s\n", std::string(rows.status().message()).c_str());
    return 2;
  }
  const std::string text = args.format == "json" ? sim::FormatAmplifyJson(*rows, args.config)
                                                 : sim::FormatAmplifyTable(*rows, args.config);
  std::fputs(text.c_str(), stdout);
  return OutputWritten("idem sim amplify") ? 0 : 1;
}

void AddAmplifyCommand(CLI::App& sim, int& exit_code) {
  auto* cmd = sim.add_subcommand(
      "amplify",
      "Count the calls that reach a failing dependency under a stack of retrying layers, "
      "uncontained, with a retry budget per layer, and with retries at one layer only");
  auto args = std::make_shared<AmplifyArgs>();
  sim::AmplifyConfig& config = args->config;
  cmd->add_option("--layers", config.layers, "Layers in the stack above the dependency")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  cmd->add_option("--attempts", config.attempts, "Tries per call at each layer, first included")
      ->check(CLI::Range(1, 10))
      ->capture_default_str();
  cmd->add_option("--budget-percent", config.budget_percent,
                  "Retries a layer may make per 100 first tries")
      ->check(CLI::Range(0, 100))
      ->capture_default_str();
  cmd->add_option("--budget-floor", config.budget_floor,
                  "Retries each layer may make whatever its traffic")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  cmd->add_option("--requests", config.requests, "Top-level requests simulated")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = RunAmplify(*args); });
}

}  // namespace

void AddSimCommand(CLI::App& app, int& exit_code) {
  auto* sim = app.add_subcommand("sim",
                                 "Simulate retry strategies: backoff and jitter, retry "
                                 "amplification");
  sim->require_subcommand(1);
  AddBackoffCommand(*sim, exit_code);
  AddAmplifyCommand(*sim, exit_code);
}

}  // namespace idem::cli
