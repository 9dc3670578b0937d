// BorrowPostgresTransaction (idem/borrowed_transaction.h): the store's own transaction code on a
// connection its caller opened, began and ends; and PostgresTransaction::Borrow, which checks the
// connection is inside a transaction.
#include <libpq-fe.h>

#include "idem/borrowed_transaction.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_pool.h"
#include "store/postgres/postgres_transaction.h"

namespace idem {
namespace postgres {

absl::StatusOr<std::unique_ptr<PostgresTransaction>> PostgresTransaction::Borrow(
    PooledConnection conn, const StoreOptions& options, Clock& clock) {
  switch (PQtransactionStatus(conn->raw())) {
    case PQTRANS_INTRANS:
      return std::unique_ptr<PostgresTransaction>(
          new PostgresTransaction(Borrowed{}, std::move(conn), options, clock));
    case PQTRANS_IDLE:
      return absl::FailedPreconditionError(
          "no transaction is open on this PostgreSQL connection: run BEGIN on it first, then "
          "borrow it; idem works inside your transaction and leaves COMMIT or ROLLBACK to you");
    case PQTRANS_INERROR:
      return absl::FailedPreconditionError(
          "the transaction on this PostgreSQL connection has failed (a statement failed), so "
          "the server refuses every statement until ROLLBACK: roll it back, begin again, and "
          "borrow the connection then");
    case PQTRANS_ACTIVE:
      return absl::FailedPreconditionError(
          "a command is still under way on this PostgreSQL connection: read all its results "
          "(PQgetResult until null) before borrowing it");
    default:
      return absl::UnavailableError(
          "this PostgreSQL connection is broken (PQtransactionStatus is PQTRANS_UNKNOWN): "
          "reconnect, begin a transaction and borrow it then");
  }
}

}  // namespace postgres

absl::StatusOr<std::unique_ptr<StoreTransaction>> BorrowPostgresTransaction(
    PGconn* conn, const BorrowOptions& options) {
  if (conn == nullptr) return absl::InvalidArgumentError("BorrowPostgresTransaction: conn is null");
  // A connection of no pool: destroying it leaves `conn` open.
  postgres::PooledConnection borrowed(nullptr, postgres::PgConnection::Borrow(conn));
  Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  absl::StatusOr<std::unique_ptr<postgres::PostgresTransaction>> tx =
      postgres::PostgresTransaction::Borrow(std::move(borrowed),
                                            StoreOptions{.retention = options.retention}, clock);
  if (!tx.ok()) return tx.status();
  return std::unique_ptr<StoreTransaction>(*std::move(tx));
}

}  // namespace idem
