// A lease batch's writes as set-based statements (pg_set_statements.h), inside the batch's
// transaction, in one pipeline sent with BEGIN: the batch's clock; the locking of every existing
// row of its scopes, in lock order; its claims in one INSERT … ON CONFLICT DO NOTHING RETURNING;
// its heartbeats, its outcomes and its releases in one statement each, the fence checked inside.
// Then, from the locked rows:
//  - a claim whose row was locked and not inserted over is reported (another's record, or its
//    own: LeaseWrite::claim_nonce), or written over (an expired record replaced, a lapsed lease
//    taken over) by a statement of its own on its locked row;
//  - a fenced write that changed nothing is explained by its locked row;
//  - one read explains the writes whose rows were not locked (a claim that lost to a concurrent
//    claimer, a fenced write of a record that appeared since).
// Those two, only when needed, go in one more pipeline. The results are those of the same writes
// run one statement at a time (pg_lease_in_turn.h).
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

struct SetBatchOutcome {
  int64_t now_ms = 0;  // the batch's clock
  // The results in the caller's order; nullopt when a claim must write over a record it did not
  // lock (one that appeared or vanished since): the caller rolls back and applies the batch one
  // statement at a time, at now_ms.
  std::optional<std::vector<LeaseWriteResult>> results;
};

// Applies `writes` as above; `scopes` are the scopes of the valid writes in lock order (`order`,
// LockOrder(writes)). The clock is `clock`'s, else the database's. Errors: a failed statement's
// (the batch must be rolled back). REQUIRES: no scope twice.
absl::StatusOr<SetBatchOutcome> ApplySetBased(PgConnection& conn, const Clock* clock,
                                              Millis retention, BatchRules rules,
                                              std::span<const LeaseWrite> writes,
                                              std::span<const size_t> order,
                                              std::span<const Scope* const> scopes);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_SET_BATCH_H_
