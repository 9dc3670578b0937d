// Scratch files and direct reads of a ledger's tables, for the ledger's tests. The tables are read
// with plain SQL through the store's own transaction (idem::OpenStore → Begin → Query), not
// through idem-ledger, so that what the tests check does not depend on the code under test, and
// the same checks run on every backend (SQLite and PostgreSQL).
#ifndef IDEM_TESTS_LEDGER_LEDGER_FILES_H_
#define IDEM_TESTS_LEDGER_LEDGER_FILES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace idem::ledger_test {

// A fresh directory under the test's temporary directory, removed with everything in it.
class ScratchDir final {
 public:
  ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();

  // Returns the path of `name` inside the directory.
  std::string Path(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Writes `lines`, each followed by '\n', to `path`.
void WriteLines(const std::string& path, const std::vector<std::string>& lines);

// Splits `text` into lines, dropping the final empty one.
std::vector<std::string> SplitLines(const std::string& text);

// Returns the balances a file of valid transfers must produce: account → sum of its legs.
std::map<std::string, int64_t> ExpectedBalances(const std::vector<std::string>& lines);

// Runs `sql` (a query of two columns: text, integer; SQL both SQLite and PostgreSQL accept) in a
// read-only use of a transaction of the store at `store_uri` (sqlite:PATH or postgresql://…),
// rolls it back, and returns the rows as a map. Fails the current test on any error or on a row
// of other types.
std::map<std::string, int64_t> QueryPairs(const std::string& store_uri, const std::string& sql);

// transfer key → how many ledger_entries rows carry it.
std::map<std::string, int64_t> EntriesPerKey(const std::string& store_uri);
// account → sum of its ledger_entries deltas.
std::map<std::string, int64_t> EntrySumsPerAccount(const std::string& store_uri);
// account → ledger_balances.balance.
std::map<std::string, int64_t> StoredBalances(const std::string& store_uri);

}  // namespace idem::ledger_test

#endif  // IDEM_TESTS_LEDGER_LEDGER_FILES_H_
