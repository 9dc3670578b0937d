// The SQL on idem_keys, on one connection: every read and write of a key record, shared by lease
// mode and transaction mode. The caller owns the transaction around these calls.
//
// Time rules (all times integer ms from the store's Clock):
//  - a record is live while now < expires; at and after expires it counts as absent;
//  - a lease has passed at and after its end. A lease written with a host clock reading
//    (common/host_clock.h) ends at lease_host on the host clock of boot lease_boot, and every
//    process of that boot reads it there: a step of the wall clock moves no lease. Read from
//    another boot (or written without a host clock) it ends at lease_until, on the wall clock.
//  - an in_progress record expires at max(created + retention, lease_until): a live lease keeps
//    its record live.
//
// Thread-safety: as the Connection passed in.
#ifndef IDEM_STORE_SQLITE_KEY_TABLE_H_
#define IDEM_STORE_SQLITE_KEY_TABLE_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/host_clock.h"
#include "idem/record.h"
#include "idem/store.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

struct ClaimParams {
  const Scope& scope;
  std::string_view fingerprint;
  std::string_view owner;
  int64_t now_ms;
  int64_t lease_until_ms;
  int64_t expires_ms;  // of the new in_progress record
  // The host clock at now_ms; the lease ends at host.millis + (lease_until_ms - now_ms) on it.
  // An empty boot: the lease runs on the wall clock alone.
  HostTime host = {};
  // The claim's note (LeaseWrite::response of a kClaim), written by every claim and takeover
  // (ReplaceExpired clears it); null: none, an empty note.
  const StoredResponse* note = nullptr;
  // The claim's nonce (LeaseWrite::claim_nonce), written by every claim and takeover; empty:
  // none (NULL), which no retry takes as its own.
  std::string_view claim_nonce = {};
};

// Fences (idem/store.h, "Fences"): one store-wide counter, table idem_fence. NextFence reads the
// fence the next winning write gives its record; UseFence records that it was handed out. Both
// run under the caller's write transaction, which holds SQLite's one write lock, so no other
// writer draws the same value in between. Errors: DataLoss when the counter row is missing.
absl::StatusOr<int64_t> NextFence(Connection& conn);
absl::Status UseFence(Connection& conn, int64_t fence);

// INSERT … ON CONFLICT DO NOTHING: returns the new record (with `fence`) when no row existed,
// nullopt when one did (live or expired).
absl::StatusOr<std::optional<KeyRecord>> InsertClaim(Connection& conn, const ClaimParams& p,
                                                     int64_t fence);

// Replaces a record that has expired with a new in_progress one with `fence`, or the old
// record's fence + 1 when that is greater (a record finished in a transaction may hold a fence
// the counter has not reached: transaction_claims.h). Returns nullopt when the record is live
// (or gone).
absl::StatusOr<std::optional<KeyRecord>> ReplaceExpired(Connection& conn, const ClaimParams& p,
                                                        int64_t fence);

// Takes over a live in_progress record of the same fingerprint with `expected_fence` whose lease
// has passed: `fence`, the new owner and lease. Returns nullopt when any of that does not hold.
// The fingerprint and created time are kept.
absl::StatusOr<std::optional<KeyRecord>> TakeOverLapsed(Connection& conn, const ClaimParams& p,
                                                        int64_t expected_fence, int64_t fence);

// TakeOverLapsed with a fence drawn from the counter (and used only when the takeover wins).
absl::StatusOr<std::optional<KeyRecord>> TakeOverKey(Connection& conn, const ClaimParams& p,
                                                     int64_t expected_fence);

// Claims `p.scope` with `fence`: inserts a new record, or else (one upsert) replaces an expired
// one or takes over a live in_progress record of the same fingerprint whose lease has passed
// (keeping its created time), with the old record's fence + 1 when that is greater than `fence`
// (as ReplaceExpired). Returns nullopt, changing nothing, when a live record blocks the
// claim. `taken_over` says whether it was a takeover. The caller records the fence as used
// (UseFence) when the claim wins.
struct UpsertedClaim {
  KeyRecord record;
  bool taken_over = false;
};
absl::StatusOr<std::optional<UpsertedClaim>> UpsertClaim(Connection& conn, const ClaimParams& p,
                                                         int64_t fence);

// Returns the live record of `scope`, or nullopt when absent or expired.
absl::StatusOr<std::optional<KeyRecord>> SelectLive(Connection& conn, const Scope& scope,
                                                    int64_t now_ms);

// The fenced writes: each touches only a live in_progress record holding `fence` and returns how
// many rows it changed (0 or 1).
absl::StatusOr<int64_t> ExtendLease(Connection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms, int64_t lease_until_ms, HostTime host);
absl::StatusOr<int64_t> RecordOutcome(Connection& conn, const Scope& scope, int64_t fence,
                                      KeyState state, const StoredResponse& response,
                                      int64_t now_ms, int64_t expires_ms);
absl::StatusOr<int64_t> DeleteClaim(Connection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms);

// Deletes at most `max_rows` expired records (in_progress ones only once their lease passed too)
// and returns how many. The predicate is checked again on each row it deletes. It and DeleteAny
// advance the fence counter past the fences they delete, so that a key claimed again always
// gets a greater fence.
absl::StatusOr<int64_t> DeleteExpired(Connection& conn, int64_t now_ms, HostTime host,
                                      int64_t max_rows);

// The records `query` selects (checked by the caller), in (tenant, key) order; `host` is the host
// clock at now_ms, for KeyQuery::lapsed (key_table_query.cc).
absl::StatusOr<std::vector<KeyRecord>> SelectMany(Connection& conn, const KeyQuery& query,
                                                  int64_t now_ms, HostTime host);

// The columns every SELECT or RETURNING of a whole record names, in ReadRecord's order.
inline constexpr const char* kKeyColumns =
    " tenant, key, fingerprint, state, fence, owner, lease_until, status, headers, body, "
    "created, updated, expires, claim_nonce ";
// Reads a row selected with kKeyColumns. Errors: DataLoss for a state or headers column that
// cannot be read.
absl::StatusOr<KeyRecord> ReadRecord(const Statement& row);
// Binds the host clock to ?index (its boot) and ?index+1 (its reading); NULL for neither when
// there is no host clock.
absl::Status BindHost(Statement& stmt, int index, HostTime host);

// Deletes the record of `scope` in any state; returns how many rows it deleted (0 or 1).
absl::StatusOr<int64_t> DeleteAny(Connection& conn, const Scope& scope);

// Claims `p.scope` under the caller's write transaction, with a fence drawn from the counter (at
// least `min_fence`) and counted: INSERT, else replace an expired record, else — only when
// `take_over_lapsed` — take over an in_progress record of the same fingerprint whose lease has
// passed. Otherwise returns claimed = false with the live record.
absl::StatusOr<ClaimResult> ClaimKey(Connection& conn, const ClaimParams& p, bool take_over_lapsed,
                                     int64_t min_fence = 0);

// Why a fenced write changed nothing, as an Aborted status naming the record's current state
// (or its absence).
absl::Status StaleFenceError(Connection& conn, const Scope& scope, int64_t fence, int64_t now_ms,
                             std::string_view operation);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_KEY_TABLE_H_
