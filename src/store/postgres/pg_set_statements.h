// The set-based statements of a PostgreSQL lease batch: each kind of write of a whole batch in
// one statement, its rows bound as arrays (text-format array literals; bodies and headers as one
// bytea each, cut by offsets) and expanded with unnest.
#ifndef IDEM_STORE_POSTGRES_PG_SET_STATEMENTS_H_
#define IDEM_STORE_POSTGRES_PG_SET_STATEMENTS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/postgres/pg_connection.h"
#include "store/postgres/pg_key_table.h"

namespace idem::postgres {

// Every existing record of `scopes` (any state), locked FOR UPDATE one after the other in the
// order given (the lock order). REQUIRES: no scope twice.
Statement LockRowsStatement(std::span<const Scope* const> scopes);
// Every existing record of `scopes`, read without locking.
Statement ReadRowsStatement(std::span<const Scope* const> scopes);

// The batch's clock, read in SQL by the statements below: `now_ms` (the caller's clock), or, when
// nullopt, the database's at the time the transaction began, the same for every statement of it.
// NowStatement returns it (one row, its first column). It also sets, for the rest of the
// transaction (REQUIRES: one is open), how the statements after it are planned: from the plan
// cached on the connection (plan_cache_mode force_generic_plan), made without sequential scans
// (enable_seqscan off), so that the locking (a primary-key lookup per key) and the claims' INSERT
// (no scan at all) are planned once per connection, and a plan made while idem_keys was small
// still looks each key up by its primary key when the table has grown. Until CustomPlansStatement,
// only those two may follow, and the fenced writes when the table is large (kLargeKeyTableBytes).
// Its answer also holds the size of idem_keys' heap, for the next batch on the connection.
Statement NowStatement(std::optional<int64_t> now_ms);
// NowStatement's answer. Errors: Internal when it holds no row.
absl::StatusOr<int64_t> ReadNow(const Result& result);
// The size in bytes of idem_keys' heap that NowStatement's answer holds.
int64_t ReadKeyTableBytes(const Result& result);
// From this size of idem_keys' heap on, a plan of a fenced write made without sequential scans
// for no values in particular (the arrays' length unknown) is the primary-key loop a custom plan
// is: planned once per connection instead of at every batch. PostgreSQL 15 picked that loop from
// 80 KB of heap on (250 rows of 200-byte bodies; 150 rows of 1,500-byte ones) and, at 64 KB and
// below, a read of the whole primary-key index; a megabyte leaves a wide margin.
constexpr int64_t kLargeKeyTableBytes = int64_t{1} << 20;
// Sets, for the rest of the transaction, that every statement is planned at every run for its
// parameters' values (plan_cache_mode force_custom_plan), prepared or not: what the fenced
// writes below need, and any statement of the batch after them.
Statement CustomPlansStatement();

// The claims, inserted in the order given (the lock order) with fences from idem_fence_seq and
// leases from the batch's now: INSERT … ON CONFLICT DO NOTHING, returning the records inserted.
// REQUIRES: no scope twice; kClaim writes.
Statement InsertClaimsStatement(std::span<const LeaseWrite* const> claims,
                                std::optional<int64_t> now_ms, Millis retention);

// The fenced writes. Each changes the records of the writes that still hold their claim
// (in_progress with the write's fence, unexpired at the batch's now) and returns their (tenant,
// key). A join of the table with the arrays, whose best plan depends on the arrays' length and on
// the table's size: prepared once per connection, and planned at every run for the values then
// unless the table is large (kLargeKeyTableBytes).
// REQUIRES: no scope twice; every write of the kind the statement names; CustomPlansStatement
// ran before it in the transaction, or the table's heap held kLargeKeyTableBytes at the
// connection's last batch (else a plan cached while the table was small could scan it whole).
Statement ExtendLeasesStatement(std::span<const LeaseWrite* const> heartbeats,
                                std::optional<int64_t> now_ms);
// kComplete and kFailFinal together; the records then expire after `retention`.
Statement RecordOutcomesStatement(std::span<const LeaseWrite* const> finishes,
                                  std::optional<int64_t> now_ms, Millis retention);
Statement DeleteClaimsStatement(std::span<const LeaseWrite* const> releases,
                                std::optional<int64_t> now_ms);

// The bytes a finish's outcome adds to RecordOutcomesStatement's parameters; callers keep a
// statement's total under kMaxOutcomeBytes (a parameter holds at most 1 GB).
size_t OutcomeBytes(const LeaseWrite& finish);
constexpr size_t kMaxOutcomeBytes = size_t{64} << 20;

// ScopeId of each row of a result whose first two columns are tenant and key.
std::vector<std::string> ScopeIdsOf(const Result& result);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_SET_STATEMENTS_H_
