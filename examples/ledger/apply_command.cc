// `idem-ledger apply --store URI FILE`: applies a file of keyed transfers, one JSON object a line.
//
// Every line is handled on its own: a bad line, a declined transfer or a reused key is reported
// on stderr with its line number, stores nothing, and the run goes on with the next line. A store
// failure that outlasts the retries stops the run (the lines after it would fail the same way);
// running the same file again later resumes where it stopped, since applied lines only replay.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "cli_support.h"
#include "commands.h"
#include "ledger.h"
#include "line_reader.h"

namespace idem::ledger {
namespace {

struct ApplyFlags {
  StoreFlags store;
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
    if (absl::IsFailedPrecondition(status) || absl::IsAborted(status) ||
        absl::IsOutOfRange(status)) {
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

// The input file (or stdin), closed when done.
struct Input {
  std::FILE* file = nullptr;
  ~Input() {
    if (file != nullptr && file != stdin) std::fclose(file);
  }
};

// Applies every line of `in`. Returns false when the run stopped on a store failure or a read
// error (said on stderr).
bool ApplyAll(Ledger& ledger, const ApplyFlags& flags, std::FILE* in, Counts& counts) {
  LineReader reader(in);
  std::string line;
  for (int64_t line_number = 1;; ++line_number) {
    switch (reader.Next(line)) {
      case LineRead::kEnd:
        return true;
      case LineRead::kError:
        PrintError(
            fmt::format("cannot read '{}' at line {}: {}; stopping (the lines before it "
                        "were applied; fix the input and apply it again)",
                        flags.file, line_number, std::strerror(reader.error())));
        return false;
      case LineRead::kTooLong:
        Reject(flags, counts, line_number,
               fmt::format("the line is longer than {} bytes; nothing was applied for this line",
                           kMaxLineBytes));
        continue;
      case LineRead::kLine:
        break;
    }
    if (IsBlank(line)) continue;
    if (!ApplyLine(ledger, flags, line_number, line, counts)) return false;
  }
}

int RunApply(const ApplyFlags& flags) {
  Input input{.file = stdin};
  if (flags.file != "-") {
    input.file = std::fopen(flags.file.c_str(), "r");
    if (input.file == nullptr) {
      PrintError(
          fmt::format("cannot read '{}': {}; check the path", flags.file, std::strerror(errno)));
      return kExitFailed;
    }
  }
  auto ledger = Ledger::Open(flags.store.store, {.overdraft_limit = flags.overdraft_limit,
                                                 .lock_timeout = flags.store.lock_timeout});
  if (!ledger.ok()) {
    PrintError(StoreFailure("open store", flags.store, ledger.status()));
    return kExitFailed;
  }
  Counts counts;
  const bool finished = ApplyAll(**ledger, flags, input.file, counts);
  std::fputs(fmt::format("applied {}, replayed {}, rejected {}\n", counts.applied, counts.replayed,
                         counts.rejected)
                 .c_str(),
             stdout);
  if (!OutputWritten() || !finished) return kExitFailed;
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
  AddStoreFlags(*apply, flags->store);
  apply->add_option("FILE", flags->file, "The transfers, one JSON object a line ('-': stdin)")
      ->required();
  apply
      ->add_option("--overdraft-limit", flags->overdraft_limit,
                   "Decline a transfer that would take the paying account below minus this "
                   "(default: no limit); a decline is stored and replayed like a success")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            int64_t value = 0;
            if (!CLI::detail::lexical_cast(text, value) || value < 0) {
              return "must be a whole number, 0 or more";
            }
            return std::string();
          },
          "NUMBER >= 0"));
  apply->add_flag("--progress", flags->progress,
                  "Print 'line N applied|replayed|rejected' as each line is done");
  apply->callback([flags, &exit_code] { exit_code = RunApply(*flags); });
}

void AddBalancesCommand(CLI::App& app, int& exit_code) {
  auto store = std::make_shared<StoreFlags>();
  CLI::App* balances = app.add_subcommand(
      "balances",
      "Print every account's balance as one JSON object, keys sorted. The store must exist: "
      "balances never creates one");
  AddStoreFlags(*balances, *store);
  balances->callback([store, &exit_code] {
    auto ledger =
        Ledger::Open(store->store, {.lock_timeout = store->lock_timeout, .create_store = false});
    absl::StatusOr<std::map<std::string, int64_t>> result =
        ledger.ok() ? (*ledger)->Balances() : ledger.status();
    if (!result.ok()) {
      PrintError(StoreFailure("read balances from", *store, result.status()));
      exit_code = kExitFailed;
      return;
    }
    std::fputs((BalancesJson(*result) + "\n").c_str(), stdout);
    exit_code = OutputWritten() ? kExitOk : kExitFailed;
  });
}

}  // namespace idem::ledger
