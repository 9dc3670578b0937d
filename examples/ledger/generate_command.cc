// `idem-ledger generate --count N --seed S`: writes N keyed transfers to stdout, the same ones
// for the same seed on every machine (std::mt19937_64's sequence is fixed by the C++ standard,
// and the draws use plain modulo rather than the library-defined distributions).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "commands.h"
#include "transfer.h"

namespace idem::ledger {
namespace {

struct GenerateFlags {
  int64_t count = 1000;
  uint64_t seed = 1;
  int accounts = 10;
  int64_t max_amount = 1000;
};

void Generate(const GenerateFlags& flags) {
  std::mt19937_64 rng(flags.seed);
  const auto n = static_cast<uint64_t>(flags.accounts);
  for (int64_t i = 1; i <= flags.count; ++i) {
    const uint64_t from = rng() % n;
    const uint64_t to = (from + 1 + rng() % (n - 1)) % n;  // never equal to `from`
    const Transfer transfer{
        .key = fmt::format("transfer-{}-{}", flags.seed, i),
        .from = fmt::format("acct-{:02}", from),
        .to = fmt::format("acct-{:02}", to),
        .amount = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(flags.max_amount)),
    };
    std::fputs((FormatTransfer(transfer) + "\n").c_str(), stdout);
  }
}

}  // namespace

void AddGenerateCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<GenerateFlags>();
  CLI::App* generate = app.add_subcommand(
      "generate", "Write N keyed transfers, one JSON object a line, to stdout (deterministic)");
  generate->add_option("--count", flags->count, "How many transfers (default 1000)")
      ->check(CLI::NonNegativeNumber);
  generate->add_option("--seed", flags->seed,
                       "Seed; the same seed gives the same file (default 1)");
  generate->add_option("--accounts", flags->accounts, "How many accounts (default 10)")
      ->check(CLI::Range(2, 100));
  generate->add_option("--max-amount", flags->max_amount, "Largest amount (default 1000)")
      ->check(CLI::Range(int64_t{1}, kMaxAmount));
  generate->callback([flags, &exit_code] {
    Generate(*flags);
    exit_code = std::fflush(stdout) == 0 ? kExitOk : kExitFailed;
  });
}

}  // namespace idem::ledger
