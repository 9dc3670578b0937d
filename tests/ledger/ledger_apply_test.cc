// idem-ledger end to end, as a user runs it: the real binary on a real SQLite store.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "idem/store.h"
#include "ledger.h"
#include "ledger_files.h"
#include "ledger_process.h"

namespace idem::ledger_test {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;

class LedgerApplyTest : public ::testing::Test {
 protected:
  std::string db() const { return dir_.Path("ledger.db"); }
  std::string store() const { return "sqlite:" + db(); }
  Finished Apply(const std::string& file, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"apply", "--store", store(), file};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunLedger(args);
  }
  std::string Balances() {
    Finished run = RunLedger({"balances", "--store", store()});
    EXPECT_EQ(run.exit_code, 0) << run.err;
    return run.out;
  }
  absl::StatusOr<KeyRecord> Record(const std::string& key) {
    auto opened = OpenStore(store());
    if (!opened.ok()) return opened.status();
    return (*opened)->Get(Scope{.tenant = std::string(ledger::kTenant), .key = key});
  }

  ScratchDir dir_;
};

TEST_F(LedgerApplyTest, SameFileAppliedTwiceAppliesNothingTheSecondTime) {
  Finished generated = RunLedger({"generate", "--count", "200", "--seed", "3"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const std::string file = dir_.Path("transfers.jsonl");
  WriteLines(file, SplitLines(generated.out));

  Finished first = Apply(file);
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, "applied 200, replayed 0, rejected 0\n");
  const std::string balances = Balances();

  Finished second = Apply(file);
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, "applied 0, replayed 200, rejected 0\n");
  EXPECT_EQ(Balances(), balances);
  EXPECT_EQ(balances, ledger::BalancesJson(ExpectedBalances(SplitLines(generated.out))) + "\n");
  for (const auto& [key, entries] : EntriesPerKey(store())) EXPECT_EQ(entries, 2) << key;
  EXPECT_EQ(EntriesPerKey(store()).size(), 200u);
}

TEST_F(LedgerApplyTest, MalformedLinesAreReportedByLineNumberAndStoreNothing) {
  const std::string file = dir_.Path("transfers.jsonl");
  WriteLines(file, {
                       R"({"key": "good-1", "from": "a", "to": "b", "amount": 5})",
                       R"({"key": "bad-json", "from": "a", "to": "b", "amount": 5)",
                       R"({"key": "no-amount", "from": "a", "to": "b"})",
                       R"({"key": "zero", "from": "a", "to": "b", "amount": 0})",
                       R"({"key": "same", "from": "a", "to": "a", "amount": 1})",
                       R"({"key": "bad key", "from": "a", "to": "b", "amount": 1})",
                       R"({"key": "fraction", "from": "a", "to": "b", "amount": 1.5})",
                       R"({"key": "good-2", "from": "b", "to": "c", "amount": 2})",
                   });
  Finished run = Apply(file);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "applied 2, replayed 0, rejected 6\n");
  EXPECT_THAT(run.err, HasSubstr(file + ":2: not valid JSON"));
  EXPECT_THAT(run.err, HasSubstr(file + ":3: field 'amount' is missing"));
  EXPECT_THAT(run.err, HasSubstr(file + ":4: field 'amount' is 0"));
  EXPECT_THAT(run.err, HasSubstr(file + ":5: 'from' and 'to' are both 'a'"));
  EXPECT_THAT(run.err, HasSubstr(file + ":6: field 'key' is not a valid idempotency key"));
  EXPECT_THAT(run.err, HasSubstr(file + ":7: field 'amount' must be an integer"));
  EXPECT_THAT(EntriesPerKey(store()), ElementsAre(Pair("good-1", 2), Pair("good-2", 2)));
  EXPECT_EQ(Balances(), "{\"a\":-5,\"b\":3,\"c\":2}\n");
  for (const char* key : {"no-amount", "zero", "same", "fraction"}) {
    EXPECT_EQ(Record(key).status().code(), absl::StatusCode::kNotFound) << key;
  }
}

TEST_F(LedgerApplyTest, KeyReusedForAnotherTransferIsRejectedAndChangesNothing) {
  const std::string first = dir_.Path("first.jsonl");
  const std::string second = dir_.Path("second.jsonl");
  WriteLines(first, {R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})"});
  WriteLines(second, {R"({"key": "t-2", "from": "b", "to": "c", "amount": 1})",
                      R"({"key": "t-1", "from": "a", "to": "b", "amount": 500})"});
  ASSERT_EQ(Apply(first).exit_code, 0);
  Finished run = Apply(second);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "applied 1, replayed 0, rejected 1\n");
  EXPECT_THAT(run.err, HasSubstr(second + ":2: transfer 't-1': "));
  EXPECT_THAT(run.err, HasSubstr("different request"));
  EXPECT_EQ(Balances(), "{\"a\":-5,\"b\":4,\"c\":1}\n");
}

TEST_F(LedgerApplyTest, SameTransferWithFieldsReorderedIsARedelivery) {
  const std::string first = dir_.Path("first.jsonl");
  const std::string again = dir_.Path("again.jsonl");
  WriteLines(first, {R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})"});
  WriteLines(again, {R"({ "amount":5, "to":"b", "from":"a", "key":"t-1" })"});
  ASSERT_EQ(Apply(first).exit_code, 0);
  Finished run = Apply(again);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "applied 0, replayed 1, rejected 0\n");
  EXPECT_EQ(Balances(), "{\"a\":-5,\"b\":5}\n");
}

TEST_F(LedgerApplyTest, DeclinedTransferIsStoredAsFailedFinalAndDeclinedAgainOnReplay) {
  const std::string file = dir_.Path("transfers.jsonl");
  WriteLines(file, {R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})",
                    R"({"key": "t-2", "from": "a", "to": "b", "amount": 20})",
                    R"({"key": "t-3", "from": "b", "to": "a", "amount": 1})"});
  Finished run = Apply(file, {"--overdraft-limit", "10"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "applied 2, replayed 0, rejected 1\n");
  EXPECT_THAT(run.err, HasSubstr(file + ":2: transfer 't-2' declined: account 'a' holds -5"));
  auto record = Record("t-2");
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kFailedFinal);
  EXPECT_THAT(EntriesPerKey(store()), ElementsAre(Pair("t-1", 2), Pair("t-3", 2)));

  // Without the limit the stored refusal still stands: the key's outcome is decided.
  Finished again = Apply(file);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_EQ(again.out, "applied 0, replayed 2, rejected 1\n");
  EXPECT_THAT(again.err,
              HasSubstr(file + ":2: transfer 't-2' declined (decided by an earlier run)"));
  EXPECT_EQ(Balances(), "{\"a\":-4,\"b\":4}\n");
}

TEST_F(LedgerApplyTest, BlankLinesAreSkippedAndKeepLineNumbersTrue) {
  const std::string file = dir_.Path("transfers.jsonl");
  WriteLines(file, {"", R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})", "  ",
                    R"({"key": "t-2"})"});
  Finished run = Apply(file);
  EXPECT_EQ(run.out, "applied 1, replayed 0, rejected 1\n");
  EXPECT_THAT(run.err, HasSubstr(file + ":4: field 'from' is missing"));
}

TEST_F(LedgerApplyTest, BalancesOfAnEmptyLedgerIsAnEmptyObject) {
  const std::string empty = dir_.Path("empty.jsonl");
  WriteLines(empty, {});
  ASSERT_EQ(Apply(empty).exit_code, 0);  // creates the store; balances never does
  EXPECT_EQ(Balances(), "{}\n");
}

TEST_F(LedgerApplyTest, UnknownStoreSchemeFailsWithExitCode2) {
  const std::string file = dir_.Path("transfers.jsonl");
  WriteLines(file, {R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})"});
  Finished run = RunLedger({"apply", "--store", "mysql://localhost/x", file});
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("cannot open store 'mysql://localhost/x'"));
  EXPECT_THAT(run.out, IsEmpty());
}

TEST_F(LedgerApplyTest, MissingFileFailsWithExitCode2) {
  Finished run = Apply(dir_.Path("absent.jsonl"));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_THAT(run.err, HasSubstr("cannot read"));
}

TEST(LedgerGenerate, SameSeedGivesTheSameFileAndAnotherSeedAnother) {
  Finished a = RunLedger({"generate", "--count", "50", "--seed", "9"});
  Finished b = RunLedger({"generate", "--count", "50", "--seed", "9"});
  Finished c = RunLedger({"generate", "--count", "50", "--seed", "10"});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(SplitLines(a.out).size(), 50u);
  EXPECT_EQ(a.out, b.out);
  EXPECT_NE(a.out, c.out);
  for (const std::string& line : SplitLines(a.out)) {
    EXPECT_TRUE(ledger::ParseTransfer(line).ok()) << line;
  }
}

}  // namespace
}  // namespace idem::ledger_test
