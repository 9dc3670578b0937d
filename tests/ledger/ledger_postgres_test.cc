// idem-ledger on the shared store: the same binary and the same commands, --store postgresql://…,
// against the private PostgreSQL server of the "postgres" CTest fixture.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ledger.h"
#include "ledger_files.h"
#include "ledger_process.h"
#include "pg_test_support.h"

namespace idem::ledger_test {
namespace {

using ::testing::HasSubstr;

class LedgerPostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    schema_ = fresh->schema;
    store_ = fresh->uri;
  }
  std::vector<std::vector<std::string>> Admin(const std::string& sql) {
    auto rows = pgtest::AdminQuery(schema_, sql);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : std::vector<std::vector<std::string>>{};
  }

  ScratchDir dir_;
  std::string schema_;
  std::string store_;
};

TEST_F(LedgerPostgresTest, SameFileAppliedTwiceAppliesNothingTheSecondTime) {
  Finished generated = RunLedger({"generate", "--count", "300", "--seed", "5"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  const std::vector<std::string> lines = SplitLines(generated.out);
  const std::string file = dir_.Path("transfers.jsonl");
  WriteLines(file, lines);

  Finished first = RunLedger({"apply", "--store", store_, file});
  EXPECT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out, "applied 300, replayed 0, rejected 0\n");
  Finished second = RunLedger({"apply", "--store", store_, file});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(second.out, "applied 0, replayed 300, rejected 0\n");

  Finished balances = RunLedger({"balances", "--store", store_});
  EXPECT_EQ(balances.exit_code, 0) << balances.err;
  EXPECT_EQ(balances.out, ledger::BalancesJson(ExpectedBalances(lines)) + "\n");
  // Read by the server itself, not through idem: two legs per key, 300 keys.
  EXPECT_EQ(Admin("SELECT count(*) FROM (SELECT transfer_key FROM ledger_entries "
                  "GROUP BY transfer_key HAVING count(*) = 2) AS twice"),
            (std::vector<std::vector<std::string>>{{"300"}}));
  EXPECT_EQ(Admin("SELECT count(*) FROM ledger_entries"),
            (std::vector<std::vector<std::string>>{{"600"}}));
}

TEST_F(LedgerPostgresTest, DeclinedAndMalformedLinesStoreNothing) {
  const std::string file = dir_.Path("transfers.jsonl");
  WriteLines(file, {R"({"key": "t-1", "from": "a", "to": "b", "amount": 5})",
                    R"({"key": "t-2", "from": "a", "to": "b", "amount": 20})",
                    R"({"key": "t-3", "from": "a", "to": "b", "amount": "7"})"});
  Finished run = RunLedger({"apply", "--store", store_, "--overdraft-limit", "10", file});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.out, "applied 1, replayed 0, rejected 2\n");
  EXPECT_THAT(run.err, HasSubstr(file + ":2: transfer 't-2' declined"));
  EXPECT_THAT(run.err, HasSubstr(file + ":3: field 'amount' must be an integer"));
  EXPECT_EQ(Admin("SELECT transfer_key, count(*) FROM ledger_entries GROUP BY transfer_key"),
            (std::vector<std::vector<std::string>>{{"t-1", "2"}}));
  Finished balances = RunLedger({"balances", "--store", store_});
  EXPECT_EQ(balances.out, "{\"a\":-5,\"b\":5}\n");
}

}  // namespace
}  // namespace idem::ledger_test
