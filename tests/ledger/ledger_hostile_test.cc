// idem-ledger used as a careless or hostile user would (issue 12): the clock moved past the key
// retention, a directory as input, output to a full device, duplicate fields, balances at the
// edge of 64-bit range, locked and missing stores, odd flags. Each test names what broke.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "idem/store.h"
#include "ledger_files.h"
#include "ledger_process.h"

namespace idem::ledger_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::Pair;
using ::testing::StartsWith;

constexpr char kTransfer[] = R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})";

// The environment that runs a child 25 hours in the future (libfaketime), past the store's
// default 24 h key retention. ASan must be told that it is not the first library loaded.
SpawnOptions TwentyFiveHoursLater() {
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options =
      (asan != nullptr && *asan != '\0' ? std::string(asan) + ":" : std::string()) +
      "verify_asan_link_order=0";
  return SpawnOptions{
      .env = {"LD_PRELOAD=" IDEM_LIBFAKETIME, "FAKETIME=+25h", "ASAN_OPTIONS=" + asan_options}};
}

class LedgerHostileTest : public ::testing::Test {
 protected:
  std::string db() const { return dir_.Path("ledger.db"); }
  std::string store() const { return "sqlite:" + db(); }
  std::string File(const std::vector<std::string>& lines) {
    const std::string path = dir_.Path("transfers-" + std::to_string(++files_) + ".jsonl");
    WriteLines(path, lines);
    return path;
  }
  Finished Apply(const std::string& file, const SpawnOptions& options = {}) {
    return RunLedger({"apply", "--store", store(), file}, options);
  }
  std::string Balances() {
    Finished run = RunLedger({"balances", "--store", store()});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.out;
  }

  ScratchDir dir_;
  int files_ = 0;
};

TEST_F(LedgerHostileTest, TransferIsNotAppliedAgainAfterTheKeyRetentionPassed) {
  const std::string file = File({kTransfer});
  ASSERT_EQ(Apply(file).exit_code, 0);
  Finished later = Apply(file, TwentyFiveHoursLater());
  EXPECT_EQ(later.exit_code, 0) << later.err;
  EXPECT_EQ(later.out, "applied 0, replayed 1, rejected 0\n");
  EXPECT_EQ(Balances(), "{\"a\":-5,\"b\":5}\n");
  EXPECT_THAT(EntriesPerKey(store()), ElementsAre(Pair("t-1", 2)));
  // The replay after the retention is remembered like any other.
  EXPECT_EQ(Apply(file).out, "applied 0, replayed 1, rejected 0\n");
}

TEST_F(LedgerHostileTest, KeyReusedAfterTheRetentionForAnotherTransferIsRejected) {
  ASSERT_EQ(Apply(File({kTransfer})).exit_code, 0);
  const std::string other = File({R"({"key": "t-1", "from": "a", "to": "b", "amount": 500})"});
  Finished later = Apply(other, TwentyFiveHoursLater());
  EXPECT_EQ(later.exit_code, 1);
  EXPECT_EQ(later.out, "applied 0, replayed 0, rejected 1\n");
  EXPECT_THAT(later.err, HasSubstr(other + ":1: transfer 't-1': "));
  EXPECT_THAT(later.err, HasSubstr("different transfer"));
  EXPECT_EQ(Balances(), "{\"a\":-5,\"b\":5}\n");
}

TEST_F(LedgerHostileTest, DirectoryAsInputFailsWithExitCode2SayingWhere) {
  const std::string directory = dir_.Path("a-directory");
  std::filesystem::create_directory(directory);
  Finished run = Apply(directory);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("cannot read '" + directory + "' at line 1"));
  EXPECT_THAT(run.err, HasSubstr("Is a directory"));
}

TEST_F(LedgerHostileTest, OutputThatCannotBeWrittenExitsNonZero) {
  const std::string file = File({kTransfer});
  Finished apply = Apply(file, {.stdout_path = "/dev/full"});
  EXPECT_EQ(apply.exit_code, 2);
  EXPECT_THAT(apply.err, HasSubstr("idem-ledger: cannot write the output"));
  Finished balances = RunLedger({"balances", "--store", store()}, {.stdout_path = "/dev/full"});
  EXPECT_EQ(balances.exit_code, 2);
  EXPECT_THAT(balances.err, HasSubstr("idem-ledger: cannot write the output"));
  Finished progress =
      RunLedger({"apply", "--progress", "--store", store(), file}, {.stdout_path = "/dev/full"});
  EXPECT_EQ(progress.exit_code, 2);
}

TEST_F(LedgerHostileTest, LineWithAFieldGivenTwiceIsRejected) {
  const std::string file =
      File({R"({"key": "t-1", "from": "a", "to": "b", "amount": 5, "amount": 7})"});
  Finished run = Apply(file);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "applied 0, replayed 0, rejected 1\n");
  EXPECT_THAT(run.err, HasSubstr(file + ":1: field 'amount' is given twice"));
  // A clean delivery of the same transfer afterwards is applied.
  Finished clean = Apply(File({kTransfer}));
  EXPECT_EQ(clean.exit_code, 0) << clean.err;
  EXPECT_EQ(Balances(), "{\"a\":-5,\"b\":5}\n");
}

TEST_F(LedgerHostileTest, BalancePastTheIntegerRangeIsRefusedBeforeWriting) {
  ASSERT_EQ(Apply(File({kTransfer})).exit_code, 0);
  {
    auto opened = OpenStore(store());
    ASSERT_TRUE(opened.ok()) << opened.status();
    auto tx = (*opened)->Begin();
    ASSERT_TRUE(tx.ok()) << tx.status();
    ASSERT_TRUE((*tx)
                    ->Execute("UPDATE ledger_balances SET balance = 9223372036854775800 "
                              "WHERE account = 'b'")
                    .ok());
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  const std::string file = File({R"({"key": "t-2", "from": "a", "to": "b", "amount": 10})",
                                 R"({"key": "t-3", "from": "b", "to": "a", "amount": 10})"});
  Finished run = Apply(file);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "applied 1, replayed 0, rejected 1\n");
  EXPECT_THAT(run.err, HasSubstr(file + ":1: transfer 't-2': the balance of account 'b' would"));
  EXPECT_EQ(Balances(), "{\"a\":5,\"b\":9223372036854775790}\n");
  EXPECT_THAT(EntriesPerKey(store()), ElementsAre(Pair("t-1", 2), Pair("t-3", 2)));
}

TEST_F(LedgerHostileTest, ByteOrderMarkOnLineOneGetsAClearMessage) {
  const std::string file = File({"\xEF\xBB\xBF" + std::string(kTransfer)});
  Finished run = Apply(file);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.err, HasSubstr(file + ":1: the line starts with a UTF-8 byte-order mark"));
}

TEST_F(LedgerHostileTest, OverlongLineIsRejectedAndTheRunGoesOn) {
  const std::string huge =
      R"({"key": "t-9", "from": ")" + std::string(2 << 20, 'x') + R"(", "to": "b", "amount": 5})";
  const std::string file = File({huge, kTransfer});
  Finished run = Apply(file);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "applied 1, replayed 0, rejected 1\n");
  EXPECT_THAT(run.err, HasSubstr(file + ":1: the line is longer than 65536 bytes"));
}

TEST_F(LedgerHostileTest, StoredFingerprintThatIsNotAFingerprintIsDataLossNotKeyReuse) {
  const std::string file = File({kTransfer});
  ASSERT_EQ(Apply(file).exit_code, 0);
  {
    auto opened = OpenStore(store());
    ASSERT_TRUE(opened.ok()) << opened.status();
    auto tx = (*opened)->Begin();
    ASSERT_TRUE(tx.ok()) << tx.status();
    // One flipped bit turns the hex digit '0'..'9' or 'a'..'f' into a character hex never has.
    ASSERT_TRUE(
        (*tx)->Execute("UPDATE idem_keys SET fingerprint = 'q' || substr(fingerprint, 2)").ok());
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  Finished run = Apply(file);
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("corrupt"));
  EXPECT_THAT(run.err, Not(HasSubstr("different request")));
}

TEST_F(LedgerHostileTest, LockedStoreIsWaitedForUpToLockTimeoutAndTheFlagIsNamed) {
  ASSERT_EQ(Apply(File({kTransfer})).exit_code, 0);
  auto opened = OpenStore(store());
  ASSERT_TRUE(opened.ok()) << opened.status();
  auto held = (*opened)->Begin();  // BEGIN IMMEDIATE: holds the write lock until rolled back
  ASSERT_TRUE(held.ok()) << held.status();
  const auto start = std::chrono::steady_clock::now();
  Finished run = RunLedger({"apply", "--store", store(), "--lock-timeout", "300ms",
                            File({R"({"key": "t-2", "from": "a", "to": "b", "amount": 1})"})});
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--lock-timeout"));
  EXPECT_THAT(run.err, Not(HasSubstr("StoreOptions")));
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_TRUE((*held)->Rollback().ok());
}

TEST_F(LedgerHostileTest, BalancesOfAStoreThatDoesNotExistFailsAndCreatesNothing) {
  Finished run = RunLedger({"balances", "--store", store()});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("does not exist"));
  EXPECT_FALSE(std::filesystem::exists(db()));
}

TEST_F(LedgerHostileTest, SqliteUriWithTwoSlashesIsRefusedInsteadOfWritingAtTheRoot) {
  Finished run = RunLedger({"apply", "--store", "sqlite://idem-hostile-q3.db", File({kTransfer})});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("sqlite:///"));
  EXPECT_FALSE(std::filesystem::exists("/idem-hostile-q3.db"));
}

TEST(LedgerCommandLine, PasswordOfAStoreUriIsNeverPrinted) {
  for (const std::string uri :
       {"host=127.0.0.1 password='se cret' bogus=1", "host=127.0.0.1 password=se cret",
        "postgresql://app:se%20cret@127.0.0.1:1/db?bogus=1",
        "postgresql://app@127.0.0.1:1/db?password=se%20cret&bogus=1",
        "postgresql://app@127.0.0.1:1/db?sslpassword=secret-sauce&bogus=1"}) {
    Finished run = RunLedger({"balances", "--store", uri});
    EXPECT_EQ(run.exit_code, 2) << uri;
    EXPECT_THAT(run.err, HasSubstr("cannot read balances")) << uri;
    for (const char* secret : {"se cret", "cret", "se%20cret", "secret-sauce"}) {
      EXPECT_THAT(run.err, Not(HasSubstr(secret))) << uri << "\n" << run.err;
    }
  }
}

TEST(LedgerCommandLine, VersionExitsZero) {
  Finished run = RunLedger({"--version"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out, StartsWith("idem-ledger "));
}

TEST(LedgerCommandLine, UnknownSubcommandIsNamedAndExits2EvenWithHelp) {
  for (std::vector<std::string> args : {std::vector<std::string>{"frobnicate-never"},
                                        std::vector<std::string>{"frobnicate-never", "--help"}}) {
    Finished run = RunLedger(args);
    EXPECT_EQ(run.exit_code, 2) << args.size();
    EXPECT_THAT(run.err, HasSubstr("idem-ledger: unknown subcommand 'frobnicate-never'"));
  }
}

TEST(LedgerCommandLine, UsageErrorsCarryTheProgramName) {
  Finished run = RunLedger({"apply", "x.jsonl"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, StartsWith("idem-ledger: "));
  EXPECT_THAT(run.err, HasSubstr("--store"));
}

TEST(LedgerCommandLine, NegativeOverdraftLimitGetsAShortMessage) {
  Finished run = RunLedger({"apply", "--store", "sqlite:x.db", "--overdraft-limit", "-1", "f"});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("--overdraft-limit"));
  EXPECT_LT(run.err.size(), 300u) << run.err;
}

}  // namespace
}  // namespace idem::ledger_test
