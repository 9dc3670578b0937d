// Lease-mode writes on PostgreSQL, many in one transaction (Store::ApplyLeaseBatch) or one in
// autocommit (the single lease-mode calls, a batch of one with their own rules).
//
// Lock order: a batch's writes run sorted by (tenant, key), bytewise, each scope's writes in the
// caller's order, so two batches on the same keys lock rows in the same order and cannot
// deadlock; results come back in the caller's order.
//
// Round trips: a batch of several writes reads the clock (with BEGIN), sends every write's
// statement in one pipeline (libpq pipeline mode, up to 64 writes to a round trip), then the
// reads that explain the writes that changed nothing (a claim that lost, a stale fence) in one
// more, then COMMIT. A claim that must write over the record it found (an expired record, a
// lapsed lease taken over) rolls that attempt back and the batch runs one statement at a time,
// as do batches with two writes on one scope.
//
// Time: with a clock (StoreOptions::clock set) its NowMillis(); without one the database's
// clock_timestamp(), read once per batch, so hosts sharing the database agree on every lease.
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

namespace idem::postgres {

// The batch's differences from the single calls (idem/store.h), which a single call turns off.
struct BatchRules {
  bool take_over_lapsed = true;   // kClaim takes over a lapsed lease of the same fingerprint
  bool idempotent_finish = true;  // kComplete / kFailFinal accept a repeat of the same outcome
};

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
