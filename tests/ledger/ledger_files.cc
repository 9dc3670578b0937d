#include "ledger_files.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

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

std::map<std::string, int64_t> QueryPairs(const std::string& db_path, const std::string& sql) {
  std::map<std::string, int64_t> rows;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << "cannot open " << db_path << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return rows;
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
    ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  } else {
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(stmt, 0);
      rows[text == nullptr ? "" : reinterpret_cast<const char*>(text)] =
          sqlite3_column_int64(stmt, 1);
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

std::map<std::string, int64_t> EntriesPerKey(const std::string& db_path) {
  return QueryPairs(db_path,
                    "SELECT transfer_key, COUNT(*) FROM ledger_entries GROUP BY transfer_key");
}

std::map<std::string, int64_t> EntrySumsPerAccount(const std::string& db_path) {
  return QueryPairs(db_path, "SELECT account, SUM(delta) FROM ledger_entries GROUP BY account");
}

std::map<std::string, int64_t> StoredBalances(const std::string& db_path) {
  return QueryPairs(db_path, "SELECT account, balance FROM ledger_balances");
}

}  // namespace idem::ledger_test
