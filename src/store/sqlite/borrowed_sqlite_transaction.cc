// BorrowSqliteTransaction (idem/borrowed_transaction.h): the store's own transaction code on a
// connection its caller opened, began and ends.
#include <sqlite3.h>

#include "idem/borrowed_transaction.h"
#include "store/sqlite/connection_pool.h"
#include "store/sqlite/sqlite_connection.h"
#include "store/sqlite/sqlite_transaction.h"

namespace idem {

absl::StatusOr<std::unique_ptr<StoreTransaction>> BorrowSqliteTransaction(
    sqlite3* db, const BorrowOptions& options) {
  if (db == nullptr) return absl::InvalidArgumentError("BorrowSqliteTransaction: db is null");
  // A lease of no pool: destroying it finalizes idem's statements and leaves `db` open.
  sqlite::ConnectionPool::Lease lease(nullptr, sqlite::Connection::Borrow(db));
  const Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
  absl::StatusOr<std::unique_ptr<sqlite::SqliteTransaction>> tx =
      sqlite::SqliteTransaction::Borrow(std::move(lease), clock, options.retention);
  if (!tx.ok()) return tx.status();
  return std::unique_ptr<StoreTransaction>(*std::move(tx));
}

}  // namespace idem
