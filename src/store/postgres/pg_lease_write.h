// One lease write's rules, shared by the two ways a PostgreSQL lease batch runs (set-based,
// pg_set_batch.h; one statement at a time, pg_lease_in_turn.h): what is refused before anything
// is sent, the claim a write asks for, how a write that changed nothing is explained, and the
// order in which a batch locks its keys.
#ifndef IDEM_STORE_POSTGRES_PG_LEASE_WRITE_H_
#define IDEM_STORE_POSTGRES_PG_LEASE_WRITE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "idem/clock.h"
#include "idem/record.h"
#include "idem/store.h"
#include "store/postgres/pg_key_table.h"

namespace idem::postgres {

// The batch's differences from the single calls (idem/store.h), which a single call turns off.
struct BatchRules {
  bool take_over_lapsed = true;   // kClaim takes over a lapsed lease of the same fingerprint
  bool idempotent_finish = true;  // kComplete / kFailFinal accept a repeat of the same outcome
};

// OK, or InvalidArgument for a write that must not be sent: a malformed scope, text PostgreSQL
// cannot hold (NUL, invalid UTF-8), a lease that is not positive, a kind out of range. A statement
// sent with such a write would fail and take the whole transaction with it.
absl::Status CheckWrite(const LeaseWrite& write);

// The claim `write` asks for at `now`: a lease from now, the record kept at least until the
// retention ends and at least as long as the lease.
ClaimParams ClaimAt(const LeaseWrite& write, int64_t now, Millis retention);

// The state a kComplete or kFailFinal write records.
KeyState FinalState(const LeaseWrite& write);

// The status of a Complete or FailFinal (`state`) whose statement changed nothing, from the live
// record read after it: OK for a retry of a write that committed (its answer was lost) when the
// rules allow it, else a stale fence.
absl::Status UnchangedFinish(const LeaseWrite& write, KeyState state,
                             const std::optional<KeyRecord>& found, const BatchRules& rules);

// The writes' indexes in lock order: by (tenant, key) bytewise, each scope's writes in the given
// order.
std::vector<size_t> LockOrder(std::span<const LeaseWrite> writes);

// true when a scope appears twice in `order` (sorted by scope).
bool RepeatsAScope(std::span<const LeaseWrite> writes, std::span<const size_t> order);

// A string naming `scope` alone (tenant and key hold no NUL), for maps keyed by scope.
std::string ScopeId(const Scope& scope);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_LEASE_WRITE_H_
