// A lease batch's writes one statement at a time, in lock order: the single lease-mode calls (a
// batch of one, in autocommit), and the batches the set-based form does not take (two writes on
// one scope; a claim whose row changed between the batch's reads and its writes).
//
// Thread-safety: as the PgConnection passed in.
#ifndef IDEM_STORE_POSTGRES_PG_LEASE_IN_TURN_H_
#define IDEM_STORE_POSTGRES_PG_LEASE_IN_TURN_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_lease_write.h"

namespace idem::postgres {

// The results of `writes` in the caller's order, each write's statements run in turn in `order`
// (LockOrder), at `now`. Errors: a failed statement's (a transaction must then be rolled back).
absl::StatusOr<std::vector<LeaseWriteResult>> ApplyInTurn(PgConnection& conn, int64_t now,
                                                          Millis retention,
                                                          std::span<const LeaseWrite> writes,
                                                          std::span<const size_t> order,
                                                          BatchRules rules);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_LEASE_IN_TURN_H_
