// BorrowPostgresTransaction in a build without PostgreSQL (IDEM_WITH_POSTGRES=OFF), so that code
// naming it still links and learns why it cannot work.
#include "idem/borrowed_transaction.h"

namespace idem {

absl::StatusOr<std::unique_ptr<StoreTransaction>> BorrowPostgresTransaction(
    PGconn* /*conn*/, const BorrowOptions& /*options*/) {
  return absl::UnimplementedError(
      "this idem was built without PostgreSQL (IDEM_WITH_POSTGRES=OFF): rebuild it with "
      "PostgreSQL to borrow a PGconn's transaction");
}

}  // namespace idem
