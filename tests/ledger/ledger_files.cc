#include "ledger_files.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include "idem/store.h"
#include "transfer.h"

namespace idem::ledger_test {

ScratchDir::ScratchDir() {
  std::string pattern = ::testing::TempDir() + "idem-ledger-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "cannot create a scratch directory from " << pattern;
  }
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void WriteLines(const std::string& path, const std::vector<std::string>& lines) {
  std::ofstream out(path, std::ios::trunc);
  for (const std::string& line : lines) out << line << '\n';
  out.close();
  ASSERT_TRUE(out) << "cannot write " << path;
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::map<std::string, int64_t> ExpectedBalances(const std::vector<std::string>& lines) {
  std::map<std::string, int64_t> balances;
  for (const std::string& line : lines) {
    auto transfer = ledger::ParseTransfer(line);
    EXPECT_TRUE(transfer.ok()) << line << ": " << transfer.status();
    if (!transfer.ok()) continue;
    balances[transfer->from] -= transfer->amount;
    balances[transfer->to] += transfer->amount;
  }
  return balances;
}

std::map<std::string, int64_t> QueryPairs(const std::string& store_uri, const std::string& sql) {
  std::map<std::string, int64_t> pairs;
  auto store = OpenStore(store_uri);
  if (!store.ok()) {
    ADD_FAILURE() << "cannot open " << store_uri << ": " << store.status();
    return pairs;
  }
  auto tx = (*store)->Begin();
  if (!tx.ok()) {
    ADD_FAILURE() << "cannot begin a transaction on " << store_uri << ": " << tx.status();
    return pairs;
  }
  absl::StatusOr<std::vector<SqlRow>> rows = (*tx)->Query(sql);
  EXPECT_TRUE(rows.ok()) << sql << ": " << rows.status();
  EXPECT_TRUE((*tx)->Rollback().ok());
  if (!rows.ok()) return pairs;
  for (const SqlRow& row : *rows) {
    const auto* name = row.size() == 2 ? std::get_if<std::string>(&row[0]) : nullptr;
    const auto* value = row.size() == 2 ? std::get_if<int64_t>(&row[1]) : nullptr;
    if (name == nullptr || value == nullptr) {
      ADD_FAILURE() << sql << ": a row is not (text, integer)";
      continue;
    }
    pairs[*name] = *value;
  }
  return pairs;
}

std::map<std::string, int64_t> EntriesPerKey(const std::string& store_uri) {
  return QueryPairs(store_uri,
                    "SELECT transfer_key, COUNT(*) FROM ledger_entries GROUP BY transfer_key");
}

// PostgreSQL's SUM of a BIGINT is NUMERIC (read back as a double): cast it back to an integer.
std::map<std::string, int64_t> EntrySumsPerAccount(const std::string& store_uri) {
  return QueryPairs(store_uri,
                    "SELECT account, CAST(SUM(delta) AS BIGINT) FROM ledger_entries "
                    "GROUP BY account");
}

std::map<std::string, int64_t> StoredBalances(const std::string& store_uri) {
  return QueryPairs(store_uri, "SELECT account, balance FROM ledger_balances");
}

}  // namespace idem::ledger_test
