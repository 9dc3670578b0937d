// Recognises the SQL an effect must not run inside the guard's transaction: statements that end it
// or begin another (BEGIN, START TRANSACTION, COMMIT, END, ABORT, ROLLBACK, PREPARE TRANSACTION)
// and savepoint statements on the store's own savepoints (names starting with "idem_"), whatever
// comments and whitespace precede or separate their words. Both stores refuse them (idem/store.h).
#ifndef IDEM_CORE_TRANSACTION_CONTROL_H_
#define IDEM_CORE_TRANSACTION_CONTROL_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace idem {

// Returns true when `sql` (one statement, as Transaction::Query takes it) begins with a
// transaction-control statement the store must refuse. Comments (-- to end of line, /* */ nested
// as PostgreSQL nests them), whitespace and empty statements (;) before and between its words
// are skipped. ROLLBACK TO / RELEASE / SAVEPOINT of a savepoint not named idem_* stay allowed.
bool IsTransactionControl(std::string_view sql);

// Returns true when `sql` begins with ROLLBACK [TRANSACTION | WORK] TO [SAVEPOINT] name, of any
// savepoint, skipping comments and whitespace as IsTransactionControl does: the one statement
// besides a whole rollback that a transaction whose statement failed is good for.
bool IsRollbackToSavepoint(std::string_view sql);

// A savepoint statement, read as IsTransactionControl reads SQL (comments and whitespace
// skipped): SAVEPOINT name, RELEASE [SAVEPOINT] name, ROLLBACK [TRANSACTION | WORK] TO
// [SAVEPOINT] name. A store follows its transaction's savepoints by them.
struct SavepointStatement {
  enum class Verb { kNone, kSavepoint, kRelease, kRollbackTo };
  Verb verb = Verb::kNone;  // kNone: not a savepoint statement (name empty)
  std::string name;         // upper-cased, unquoted
};
SavepointStatement ParseSavepointStatement(std::string_view sql);

// The answers both stores give on a borrowed transaction (idem/borrowed_transaction.h), whose
// owner begins and ends it on its own `connection` (named for the owner: "sqlite3",
// "PostgreSQL"). FailedPrecondition for Commit() or Rollback(), `operation` naming which:
// nothing is done, the owner ends it.
absl::Status BorrowedTransactionEndRefused(std::string_view operation, std::string_view connection);
// Internal for a call after the owner ended the transaction (the caller broke the borrowing rule,
// as a store transaction ended outside the store; never FailedPrecondition, the code of a reused
// key): borrow anew.
absl::Status BorrowedTransactionEnded(std::string_view connection);

}  // namespace idem

#endif  // IDEM_CORE_TRANSACTION_CONTROL_H_
