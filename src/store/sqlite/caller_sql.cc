#include "store/sqlite/caller_sql.h"

#include <algorithm>
#include <charconv>
#include <string_view>
#include <vector>

namespace idem::sqlite {
namespace {

// Returns N for a parameter named "$N" (N >= 1), else 0.
size_t DollarIndex(const char* name) {
  if (name == nullptr || name[0] != '$') return 0;
  const std::string_view digits(name + 1);
  size_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size()) return 0;
  return n;
}

}  // namespace

void AnalyseParameters(sqlite3_stmt* stmt, StatementNotes& notes) {
  const int count = sqlite3_bind_parameter_count(stmt);
  notes.dollar_of_param.assign(static_cast<size_t>(count), 0);
  std::vector<bool> used(static_cast<size_t>(count) + 1, false);
  bool all_dollar = true;
  notes.bound_dollar.assign(static_cast<size_t>(count), 0);
  for (int i = 1; i <= count; ++i) {
    const char* name = sqlite3_bind_parameter_name(stmt, i);
    const size_t n = DollarIndex(name);
    notes.dollar_of_param[static_cast<size_t>(i - 1)] = n;
    all_dollar = all_dollar && n != 0;
    notes.max_dollar = std::max(notes.max_dollar, n);
    // Values go to parameters named exactly $N: one written $01 is accepted but left NULL.
    if (n == 0 || name[1] == '0') continue;
    notes.bound_dollar[static_cast<size_t>(i - 1)] = n;
    if (n <= static_cast<size_t>(count)) used[n] = true;
  }
  if (!all_dollar) notes.max_dollar = 0;
  while (notes.dollar_prefix < static_cast<size_t>(count) && used[notes.dollar_prefix + 1]) {
    ++notes.dollar_prefix;
  }
  notes.analysed = true;
}

absl::Status BindValue(Statement& stmt, int index, const SqlValue& value) {
  if (const auto* i = std::get_if<int64_t>(&value)) return stmt.BindInt(index, *i);
  if (const auto* d = std::get_if<double>(&value)) return stmt.BindDouble(index, *d);
  if (const auto* s = std::get_if<std::string>(&value)) return stmt.BindText(index, *s);
  if (const auto* b = std::get_if<Blob>(&value)) return stmt.BindBlob(index, b->bytes);
  return stmt.BindNull(index);
}

SqlValue ColumnValue(const Statement& stmt, int col) {
  switch (stmt.ColumnType(col)) {
    case SQLITE_INTEGER:
      return stmt.ColumnInt(col);
    case SQLITE_FLOAT:
      return stmt.ColumnDouble(col);
    case SQLITE_TEXT:
      return stmt.ColumnBytes(col);
    case SQLITE_BLOB:
      return Blob{stmt.ColumnBytes(col)};
    default:
      return std::monostate();
  }
}

}  // namespace idem::sqlite
