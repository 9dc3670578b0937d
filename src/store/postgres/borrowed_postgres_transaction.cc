// BorrowPostgresTransaction (idem/borrowed_transaction.h): the store's own transaction code on a
// connection its caller opened, began and ends.
#include <libpq-fe.h>

#include "idem/borrowed_transaction.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_pool.h"
#include "store/postgres/postgres_transaction.h"

namespace idem {

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
