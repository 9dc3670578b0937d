// A lease batch's writes as set-based statements (pg_set_statements.h), inside the batch's
// transaction, once the rows of its scopes are locked (LockRowsStatement):
//  - a claim whose record was locked is settled from that record: reported (another's, or its
//    own: LeaseWrite::unique_owner), or written over (an expired record replaced, a lapsed lease
//    taken over) by a statement of its own on its locked row;
//  - the other claims go in one INSERT … ON CONFLICT DO NOTHING RETURNING, the heartbeats, the
//    outcomes and the releases in one statement each with the fence check inside, all in one
//    pipeline;
//  - a fenced write that changed nothing is explained by its locked record; one more read, only
//    when needed, explains the writes whose rows were not locked (a claim that lost to a
//    concurrent claimer, a fenced write of a record that appeared since).
// The results are those of the same writes run one statement at a time (pg_lease_in_turn.h).
//
// Thread-safety: as the PgConnection passed in.
#ifndef IDEM_STORE_POSTGRES_PG_SET_BATCH_H_
#define IDEM_STORE_POSTGRES_PG_SET_BATCH_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/record.h"
#include "idem/store.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_lease_write.h"

namespace idem::postgres {

// The results of `writes` in the caller's order, at `now`; `locked` holds the records of their
// scopes as LockRowsStatement returned them (a scope without one had no row). nullopt when a
// claim must write over a record it did not lock (one that appeared or vanished since): the
// caller rolls back and applies the batch one statement at a time. Errors: a failed statement's
// (the batch must be rolled back). REQUIRES: `order` is LockOrder(writes), no scope twice.
absl::StatusOr<std::optional<std::vector<LeaseWriteResult>>> ApplySetBased(
    PgConnection& conn, int64_t now, Millis retention, BatchRules rules,
    std::span<const LeaseWrite> writes, std::span<const size_t> order,
    std::span<const KeyRecord> locked);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_SET_BATCH_H_
