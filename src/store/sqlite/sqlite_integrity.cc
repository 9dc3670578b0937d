#include "store/sqlite/sqlite_integrity.h"

#include <fmt/format.h>

#include <vector>

#include "common/status_macros.h"

namespace idem::sqlite {
namespace {

// How many of SQLite's problem lines a DataLoss message quotes.
constexpr int kProblemsShown = 3;

}  // namespace

absl::Status RunIntegrityCheck(Connection& conn, const std::string& path, bool full) {
  const std::string_view pragma = full ? "PRAGMA integrity_check(100)" : "PRAGMA quick_check(100)";
  IDEM_ASSIGN_OR_RETURN(Statement stmt, conn.Prepare(pragma));
  std::vector<std::string> problems;
  const std::string_view check = full ? "integrity_check" : "quick_check";
  for (;;) {
    absl::StatusOr<bool> has_row = stmt.Step();
    if (absl::IsDataLoss(has_row.status())) {
      // Some damage (a page of the wrong type) stops the check itself.
      return absl::DataLossError(
          fmt::format("the SQLite database '{}' is corrupt: {} stopped at "
                      "the damage ({}); restore it from a backup",
                      path, check, std::string(has_row.status().message())));
    }
    if (!has_row.ok()) return has_row.status();
    if (!*has_row) break;
    std::string line = stmt.ColumnBytes(0);
    if (line != "ok") problems.push_back(std::move(line));
  }
  if (problems.empty()) return absl::OkStatus();
  std::string shown;
  for (size_t i = 0; i < problems.size() && i < kProblemsShown; ++i) {
    shown += fmt::format("{}{}", i == 0 ? "" : "; ", problems[i]);
  }
  return absl::DataLossError(fmt::format(
      "the SQLite database '{}' is corrupt: {} found {} problem{} ({}{}); restore it from a "
      "backup or point the store at another path",
      path, check, problems.size(), problems.size() == 1 ? "" : "s", shown,
      problems.size() > kProblemsShown ? "; ..." : ""));
}

}  // namespace idem::sqlite
