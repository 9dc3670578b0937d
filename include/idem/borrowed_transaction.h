// idem/borrowed_transaction.h: idem inside a transaction your application opened itself, on its
// own sqlite3* or PGconn* connection (docs/inbox.md, docs/guard.md).
//
// A consumer or a service often has its own connection and its own transaction for its business
// writes. Borrowing that transaction gives it idem's Transaction interface (the same $1, $2, …
// parameters and the same error codes as a transaction of an idem store), so the inbox
// (ConsumeOnce, idem/inbox.h) and the guard (RunOnceIn, idem/guard.h) write into it, beside
// your own statements, and everything commits or rolls back together:
//
//   sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
//   auto tx = idem::BorrowSqliteTransaction(db);
//   if (!tx.ok()) ...                                        // FailedPrecondition: no BEGIN
//   auto first = idem::ConsumeOnce(**tx, "payments", webhook_id);
//   if (first.ok() && *first) { ... your own writes, on db or through **tx ... }
//   sqlite3_exec(db, first.ok() ? "COMMIT" : "ROLLBACK", nullptr, nullptr, nullptr);
//
// The rules:
//  - idem never ends your transaction: Commit() and Rollback() of a borrowed transaction return
//    FailedPrecondition and do nothing; destroying it leaves your transaction open as it was.
//    You commit or roll back on your own connection.
//  - The database must hold idem's schema: open it once with OpenStore (idem/store.h), which
//    applies idem's migrations (the same database, and on PostgreSQL the same schema your
//    connection's search_path names). Without it, idem's statements fail with NotFound naming
//    the missing table.
//  - A statement that fails (Query, Execute, ConsumeOnce, a claim) leaves the transaction good
//    only for rolling back, as in idem's own transactions (idem/store.h). On PostgreSQL the
//    server itself has aborted your transaction then: every later statement fails until you
//    ROLLBACK (or ROLLBACK TO a savepoint taken before). The same holds for a statement of yours
//    that fails on a PostgreSQL connection: idem's next call refuses to run (Unavailable) and
//    dooms the borrowed transaction (Doomed()): roll back.
//  - Every savepoint statement of idem's has reached the database before the call that made it
//    returns (SAVEPOINT before an effect runs, RELEASE before RunOnceIn returns): an effect may
//    write on your raw connection, and your own savepoints before, around or after a call
//    behave as you wrote them. Nothing of idem's is left queued on your connection.
//  - A borrowed transaction belongs to one transaction of yours: once you commit or roll back,
//    its calls return Internal (or, if you began another meanwhile, run in that one:
//    idem cannot tell them apart); borrow again inside each transaction. Never end your
//    transaction while a call of idem on it is under way.
//  - Your connection's own settings hold: SQLite's busy timeout, PostgreSQL's lock_timeout and
//    statement_timeout (idem sets none of them on a connection it did not open). Set them if
//    a wait for a lock should be bounded (PostgreSQL waits without limit by default).
//  - SQLite: open the transaction with BEGIN IMMEDIATE when the guard runs in it (see RunOnceIn).
//  - PostgreSQL: the connection must be idle inside a transaction (PQtransactionStatus is
//    PQTRANS_INTRANS) and in blocking mode; idem leaves no prepared statement behind on it.
//
// Thread-safety: a borrowed transaction belongs to one thread, as its connection does.
#ifndef IDEM_BORROWED_TRANSACTION_H_
#define IDEM_BORROWED_TRANSACTION_H_

#include <memory>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"

// The client libraries' own connection types (sqlite3.h, libpq-fe.h), declared here so that this
// header needs neither.
typedef struct sqlite3 sqlite3;  // NOLINT(modernize-use-using): as sqlite3.h declares it
typedef struct pg_conn PGconn;   // NOLINT(modernize-use-using): as libpq-fe.h declares it

namespace idem {

struct BorrowOptions {
  // Time source for the key records the guard writes (created, expires). Not owned; must outlive
  // the transaction. Default (null): SystemClock(). ConsumeOnce takes its own clock.
  Clock* clock = nullptr;
  // How long a completed or failed_final record the guard writes is replayed: use the
  // StoreOptions::retention of the store's other users. Default 24 h, as StoreOptions'.
  Millis retention = 24h;
};

// Wraps the transaction open on `db`. The returned StoreTransaction runs statements on `db`
// itself (your own statements on `db` and idem's see each other) and holds no lock of its own.
// REQUIRES: `db` outlives the returned transaction, and is used by one thread at a time.
// Errors: InvalidArgument when `db` is null; FailedPrecondition when no transaction is open on
// `db` (sqlite3_get_autocommit(db) != 0): run BEGIN IMMEDIATE first.
absl::StatusOr<std::unique_ptr<StoreTransaction>> BorrowSqliteTransaction(
    sqlite3* db, const BorrowOptions& options = {});

// Wraps the transaction open on `conn`, as BorrowSqliteTransaction does.
// REQUIRES: `conn` outlives the returned transaction, and is used by one thread at a time.
// Errors: InvalidArgument when `conn` is null; FailedPrecondition when `conn` is not idle inside
// a transaction (no BEGIN yet, a command still running, or a transaction that already failed
// and needs ROLLBACK); Unavailable when the connection is broken; Unimplemented when idem was
// built without PostgreSQL (IDEM_WITH_POSTGRES=OFF).
absl::StatusOr<std::unique_ptr<StoreTransaction>> BorrowPostgresTransaction(
    PGconn* conn, const BorrowOptions& options = {});

}  // namespace idem

#endif  // IDEM_BORROWED_TRANSACTION_H_
