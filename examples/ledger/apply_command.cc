// `idem-ledger apply --store URI FILE`: applies a file of keyed transfers, one JSON object a line.
//
// Every line is handled on its own: a bad line, a declined transfer or a reused key is reported
// on stderr with its line number, stores nothing, and the run goes on with the next line. A store
// failure that outlasts the retries stops the run (the lines after it would fail the same way);
// running the same file again later resumes where it stopped, since applied lines only replay.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "ledger.h"

namespace idem::ledger {
namespace {

struct ApplyFlags {
  std::string store;
  std::string file;
  std::optional<int64_t> overdraft_limit;
  bool progress = false;
};

struct Counts {
  int64_t applied = 0;
  int64_t replayed = 0;
  int64_t rejected = 0;
};

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

// Reports one line's fate. Progress lines go to stdout, flushed, so that a watching process sees
// each one as soon as its transaction has committed.
void Report(const ApplyFlags& flags, int64_t line_number, std::string_view what) {
  if (!flags.progress) return;
  std::fputs(fmt::format("line {} {}\n", line_number, what).c_str(), stdout);
  std::fflush(stdout);
}

void Reject(const ApplyFlags& flags, Counts& counts, int64_t line_number, std::string_view why) {
  ++counts.rejected;
  std::fputs(fmt::format("idem-ledger: {}:{}: {}\n", flags.file, line_number, why).c_str(), stderr);
  Report(flags, line_number, "rejected");
}

// Applies one line. Returns false when the store failed and the run must stop.
bool ApplyLine(Ledger& ledger, const ApplyFlags& flags, int64_t line_number, std::string_view line,
               Counts& counts) {
  auto transfer = ParseTransfer(line);
  if (!transfer.ok()) {
    Reject(flags, counts, line_number,
           fmt::format("{}; nothing was applied for this line",
                       std::string(transfer.status().message())));
    return true;
  }
  auto result = ledger.Apply(*transfer, line);
  if (!result.ok()) {
    const absl::Status& status = result.status();
    const std::string why =
        fmt::format("transfer '{}': {}", transfer->key, std::string(status.message()));
    if (absl::IsFailedPrecondition(status) || absl::IsAborted(status)) {
      Reject(flags, counts, line_number, why + "; nothing was applied for this line");
      return true;
    }
    std::fputs(fmt::format("idem-ledger: {}:{}: store failure, stopping: {}\n", flags.file,
                           line_number, why)
                   .c_str(),
               stderr);
    return false;
  }
  switch (result->status) {
    case ApplyStatus::kApplied:
      ++counts.applied;
      Report(flags, line_number, "applied");
      break;
    case ApplyStatus::kReplayed:
      ++counts.replayed;
      Report(flags, line_number, "replayed");
      break;
    case ApplyStatus::kDeclined:
      Reject(flags, counts, line_number,
             fmt::format("transfer '{}' declined{}: {}", transfer->key,
                         result->replayed ? " (decided by an earlier run)" : "", result->detail));
      break;
  }
  return true;
}

int RunApply(const ApplyFlags& flags) {
  std::ifstream file_stream;
  std::istream* in = &std::cin;
  if (flags.file != "-") {
    file_stream.open(flags.file);
    if (!file_stream) {
      std::fputs(fmt::format("idem-ledger: cannot read '{}': check the path\n", flags.file).c_str(),
                 stderr);
      return kExitFailed;
    }
    in = &file_stream;
  }
  auto ledger = Ledger::Open(flags.store, {.overdraft_limit = flags.overdraft_limit});
  if (!ledger.ok()) {
    std::fputs(fmt::format("idem-ledger: cannot open store '{}': {}\n", flags.store,
                           std::string(ledger.status().message()))
                   .c_str(),
               stderr);
    return kExitFailed;
  }
  Counts counts;
  bool finished = true;
  std::string line;
  for (int64_t line_number = 1; finished && std::getline(*in, line); ++line_number) {
    if (IsBlank(line)) continue;
    finished = ApplyLine(**ledger, flags, line_number, line, counts);
  }
  std::fputs(fmt::format("applied {}, replayed {}, rejected {}\n", counts.applied, counts.replayed,
                         counts.rejected)
                 .c_str(),
             stdout);
  if (!finished) return kExitFailed;
  return counts.rejected == 0 ? kExitOk : kExitRejected;
}

}  // namespace

void AddApplyCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<ApplyFlags>();
  CLI::App* apply = app.add_subcommand(
      "apply",
      "Apply a file of keyed transfers, one JSON object a line: "
      "{\"key\": \"t-1\", \"from\": \"a\", \"to\": \"b\", \"amount\": 5}. Each key is applied "
      "at most once, however often the file is applied. Prints 'applied N, replayed N, "
      "rejected N'; exit code 0 when no line was rejected, 1 when some were, 2 on failure.");
  apply->add_option("--store", flags->store, "Store URI: sqlite:PATH or postgresql://...")
      ->required();
  apply->add_option("FILE", flags->file, "The transfers, one JSON object a line ('-': stdin)")
      ->required();
  apply
      ->add_option("--overdraft-limit", flags->overdraft_limit,
                   "Decline a transfer that would take the paying account below minus this "
                   "(default: no limit); a decline is stored and replayed like a success")
      ->check(CLI::NonNegativeNumber);
  apply->add_flag("--progress", flags->progress,
                  "Print 'line N applied|replayed|rejected' as each line is done");
  apply->callback([flags, &exit_code] { exit_code = RunApply(*flags); });
}

void AddBalancesCommand(CLI::App& app, int& exit_code) {
  auto store = std::make_shared<std::string>();
  CLI::App* balances = app.add_subcommand(
      "balances", "Print every account's balance as one JSON object, keys sorted");
  balances->add_option("--store", *store, "Store URI: sqlite:PATH or postgresql://...")->required();
  balances->callback([store, &exit_code] {
    auto ledger = Ledger::Open(*store);
    absl::StatusOr<std::map<std::string, int64_t>> result =
        ledger.ok() ? (*ledger)->Balances() : ledger.status();
    if (!result.ok()) {
      std::fputs(fmt::format("idem-ledger: cannot read balances from '{}': {}\n", *store,
                             std::string(result.status().message()))
                     .c_str(),
                 stderr);
      exit_code = kExitFailed;
      return;
    }
    std::fputs((BalancesJson(*result) + "\n").c_str(), stdout);
    exit_code = kExitOk;
  });
}

}  // namespace idem::ledger
