#include "core/transaction_control.h"

#include <fmt/format.h>

#include <cctype>
#include <string>

namespace idem {
namespace {

// Reads words of SQL one at a time, skipping whitespace, comments and semicolons.
class WordReader {
 public:
  explicit WordReader(std::string_view sql) : sql_(sql) {}

  // The next word upper-cased (a quoted identifier unquoted, as written), or "" at the end or at
  // anything that is not a word.
  std::string Next() {
    SkipSpaceAndComments();
    std::string word;
    if (pos_ < sql_.size() && (sql_[pos_] == '"' || sql_[pos_] == '`' || sql_[pos_] == '[')) {
      const char close = sql_[pos_] == '[' ? ']' : sql_[pos_];
      for (++pos_; pos_ < sql_.size() && sql_[pos_] != close; ++pos_) word += Upper(sql_[pos_]);
      ++pos_;
      return word;
    }
    while (pos_ < sql_.size() && IsWordChar(sql_[pos_])) word += Upper(sql_[pos_++]);
    return word;
  }

 private:
  static bool IsWordChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
  }
  static char Upper(char c) {
    return static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }

  void SkipSpaceAndComments() {
    while (pos_ < sql_.size()) {
      const char c = sql_[pos_];
      if (std::isspace(static_cast<unsigned char>(c)) != 0 || c == ';') {
        ++pos_;
      } else if (sql_.substr(pos_, 2) == "--") {
        const size_t end = sql_.find('\n', pos_);
        pos_ = end == std::string_view::npos ? sql_.size() : end + 1;
      } else if (sql_.substr(pos_, 2) == "/*") {
        SkipBlockComment();
      } else {
        return;
      }
    }
  }

  // PostgreSQL nests block comments; SQLite ends one at the first */. Nesting is followed, which
  // for SQLite can only skip more of a statement that then still begins the same way.
  void SkipBlockComment() {
    int depth = 0;
    while (pos_ < sql_.size()) {
      if (sql_.substr(pos_, 2) == "/*") {
        ++depth;
        pos_ += 2;
      } else if (sql_.substr(pos_, 2) == "*/") {
        pos_ += 2;
        if (--depth == 0) return;
      } else {
        ++pos_;
      }
    }
  }

  std::string_view sql_;
  size_t pos_ = 0;
};

bool IsStoreSavepoint(const std::string& name) { return name.starts_with("IDEM_"); }

}  // namespace

bool IsTransactionControl(std::string_view sql) {
  WordReader words(sql);
  const std::string first = words.Next();
  if (first == "BEGIN" || first == "START" || first == "COMMIT" || first == "END" ||
      first == "ABORT") {
    return true;
  }
  if (first == "PREPARE") return words.Next() == "TRANSACTION";
  if (first == "SAVEPOINT") return IsStoreSavepoint(words.Next());
  if (first == "RELEASE") {
    std::string next = words.Next();
    if (next == "SAVEPOINT") next = words.Next();
    return IsStoreSavepoint(next);
  }
  if (first != "ROLLBACK") return false;
  std::string next = words.Next();
  if (next == "TRANSACTION" || next == "WORK") next = words.Next();
  if (next != "TO") return true;  // a whole rollback
  next = words.Next();
  if (next == "SAVEPOINT") next = words.Next();
  return IsStoreSavepoint(next);
}

bool IsRollbackToSavepoint(std::string_view sql) {
  WordReader words(sql);
  if (words.Next() != "ROLLBACK") return false;
  std::string next = words.Next();
  if (next == "TRANSACTION" || next == "WORK") next = words.Next();
  if (next != "TO") return false;
  next = words.Next();
  if (next == "SAVEPOINT") next = words.Next();
  return !next.empty();
}

SavepointStatement ParseSavepointStatement(std::string_view sql) {
  using Verb = SavepointStatement::Verb;
  WordReader words(sql);
  const std::string first = words.Next();
  SavepointStatement statement;
  if (first == "SAVEPOINT") {
    statement.verb = Verb::kSavepoint;
    statement.name = words.Next();
  } else if (first == "RELEASE") {
    statement.verb = Verb::kRelease;
    statement.name = words.Next();
    if (statement.name == "SAVEPOINT") statement.name = words.Next();
  } else if (first == "ROLLBACK") {
    std::string next = words.Next();
    if (next == "TRANSACTION" || next == "WORK") next = words.Next();
    if (next != "TO") return {};
    statement.verb = Verb::kRollbackTo;
    statement.name = words.Next();
    if (statement.name == "SAVEPOINT") statement.name = words.Next();
  }
  if (statement.name.empty()) return {};
  return statement;
}

absl::Status BorrowedTransactionEndRefused(std::string_view operation,
                                           std::string_view connection) {
  return absl::FailedPreconditionError(
      fmt::format("{}: this transaction is borrowed from your own {} connection; run COMMIT or "
                  "ROLLBACK there yourself (nothing was done)",
                  operation, connection));
}

absl::Status BorrowedTransactionEnded(std::string_view connection) {
  return absl::InternalError(
      fmt::format("your transaction on this {} connection ended (committed or rolled back) while "
                  "it was still borrowed: borrow the connection again once a new transaction is "
                  "open, and never end it while a call of idem on it is under way",
                  connection));
}

}  // namespace idem
