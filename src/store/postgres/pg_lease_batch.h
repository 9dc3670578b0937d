// Lease-mode writes on PostgreSQL, many in one transaction (Store::ApplyLeaseBatch) or one in
// autocommit (the single lease-mode calls, a batch of one with their own rules).
//
// Round trips of a batch of several writes: BEGIN, the batch's clock, the locking of every
// existing row of its scopes (pg_set_statements.h, LockRowsStatement) and every write, as one
// set-based statement per kind of write (pg_set_batch.h), in one pipeline; one more, only when a
// claim must write over its locked row (an expired record, a lapsed lease) or lost to a
// concurrent claimer; COMMIT. A batch with two writes on one scope, and a batch whose claim must
// write over a record that appeared or vanished since the locking (rolled back first), run one
// statement at a time (pg_lease_in_turn.h) after the same locking.
//
// Lock order: a batch first locks the existing rows of its keys, one after the other in (tenant,
// key) order (LockRowsStatement). After that it waits only for rows its locking did not see: at a
// claim's INSERT, for another transaction's new or changed row of that key (and, one statement at
// a time, at a row that appeared since), in (tenant, key) order: the INSERT's rows go in that
// order, and one statement at a time every statement does. A batch still locking has written
// nothing, and a set-based batch changes rows only once its INSERT is done. The order can still
// fail in one case: a row the locking did not see (absent then) is written by another transaction
// after it, while this batch already holds a row later in the order (present at its locking) that
// the other transaction goes on to write (another batch that did not see that row at its own
// locking, or a transaction-mode claim): PostgreSQL then rolls one of them back, "deadlock
// detected" (40P01). A batch so rolled back committed nothing and is run again from BEGIN (at
// most four attempts in all), by when the other has gone on; its caller does not see the
// deadlock. Results come back in the caller's order.
//
// Time: with a clock (StoreOptions::clock set) its NowMillis(); without one the database's: for a
// batch of several writes the time its transaction began (now()), for one write clock_timestamp(),
// read once, so hosts sharing the database agree on every lease.
//
// Thread-safety: as the PgConnection passed in.
#ifndef IDEM_STORE_POSTGRES_PG_LEASE_BATCH_H_
#define IDEM_STORE_POSTGRES_PG_LEASE_BATCH_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_lease_write.h"

namespace idem::postgres {

// The time writes run at: `clock`'s when set, else the database's. Errors: as PgConnection::Run.
absl::StatusOr<int64_t> StoreNow(PgConnection& conn, const Clock* clock);

// Applies `writes` as Store::ApplyLeaseBatch says: per-write failures (InvalidArgument, Aborted)
// in the results; a failed statement or COMMIT rolls everything back and is returned
// (Unavailable; the message says when the outcome is unknown).
absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(PgConnection& conn,
                                                              const Clock* clock, Millis retention,
                                                              std::span<const LeaseWrite> writes,
                                                              BatchRules rules = {});

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_LEASE_BATCH_H_
