// idem/store.h: where key records live. One interface, every backend (SQLite, PostgreSQL) passes
// the same conformance suite (src/store/testing/).
//
// Two ways to use a store (docs/design.md §2):
//  - Lease mode, for effects outside the database: Claim / Heartbeat / Complete / FailFinal /
//    Release / TakeOver, each its own committed transaction, every write after the claim carrying
//    the fencing token (the record's fence).
//  - Transaction mode, for effects in the same database: Begin() opens a StoreTransaction that
//    claims the key, runs the caller's writes, records the outcome and commits them together.
//
// Keys are scoped by (tenant, key). A record whose expires_ms has passed counts as absent
// everywhere, before and after the sweeper deletes it.
//
// Fences. Every claim that wins (a new record, the replacement of an expired one, a takeover of a
// lapsed lease) draws its fence from one store-wide counter, in the claim's own transaction (a
// sequence on PostgreSQL, a counter row on SQLite): a fence is never handed out twice by a store,
// so a (tenant, key) never sees a fence again once its record was released, swept or expired and
// claimed anew, and a holder whose lease lapsed can never write over whoever came after it.
// Fences only grow, but callers compare them by equality only: every fenced write succeeds only
// while the record is in_progress with exactly the caller's fence. A store upgraded to this rule
// starts its counter above the highest fence it holds; processes of an older idem (which start
// every claim at fence 1) must be stopped first.
// On SQLite, a claim of a key without a record in a transaction the store began (Begin(), not a
// borrowed one) takes the counter's next value without advancing it unless the transaction
// commits it still in_progress: nobody sees such a claim in_progress before its commit, so no
// other holder can ever compare against its fence. Two keys' records finished that way may carry
// the same number; a key's own fences still strictly grow, also across expiry, sweeps and purges.
//
// Thread-safety: a Store is safe to use from many threads at once; a StoreTransaction belongs to
// one thread. Many processes may open the same store.
#ifndef IDEM_STORE_H_
#define IDEM_STORE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/record.h"
#include "idem/transaction.h"

namespace idem {

using namespace std::chrono_literals;

struct StoreOptions {
  // Time source for leases, timestamps and expiry. Not owned; must outlive the store. When set
  // (tests inject a ManualClock), every store uses it. Default (null): on SQLite, SystemClock();
  // on PostgreSQL, the database server's clock (clock_timestamp(), read once per lease-mode call
  // or batch) for every lease-mode write, TakeOver, SweepExpired and List, so gateways on hosts
  // whose clocks disagree share one clock and none can take over a live lease early;
  // LeaseWriteResult::now_ms is then the database's now. Get and transaction mode read
  // SystemClock() there (a skew only shifts when a finished record stops being replayed).
  Clock* clock = nullptr;
  // How long a completed or failed_final record is replayed after it was written; an in_progress
  // record is kept at most this long after its claim. Default 24 h.
  Millis retention = 24h;
  // How long a call waits for a lock held by another connection or process before it reports
  // Unavailable. Default 5 s.
  Millis lock_timeout = 5s;
  // PostgreSQL only: the longest one statement of a transaction may run, and the longest a
  // transaction may sit idle between statements, before the server cancels it (Unavailable), so a
  // stuck effect cannot hold a key forever. Default 30 s.
  Millis statement_timeout = 30s;
  // Most connections the store opens at once. Default 8.
  int max_connections = 8;
  // SQLite only. true (default): synchronous=FULL, a commit survives power loss. false:
  // synchronous=NORMAL, in WAL mode a commit may be lost on power loss (never on a process crash)
  // in exchange for fewer fsyncs. Also settable in the URI: sqlite:PATH?synchronous=normal.
  bool durable_commits = true;
  // SQLite only. false: a file that does not exist is NotFound instead of being created (for
  // tools that only read). Default true.
  bool create_if_missing = true;
};

struct ClaimRequest {
  Scope scope;
  std::string fingerprint;
  std::string owner;
  Millis lease = 30s;  // lease mode only: how long the claim holds without a heartbeat
};

struct ClaimResult {
  // true: the caller now holds the key; record is its new in_progress record and record.fence
  // is the fencing token every later write must carry.
  // false: a live record blocked the claim; record is that record, in any state (the caller
  // replays it, reports a fingerprint mismatch, reports in-flight, or takes over an expired
  // lease).
  bool claimed = false;
  KeyRecord record;
};

// Which records List returns: every filter that is set must hold. Records come in (tenant, key)
// order, at most `limit` of them; page on by passing the last one's scope as `after`.
struct KeyQuery {
  std::optional<std::string> tenant;  // only this tenant (the empty string: the global scope)
  std::optional<KeyState> state;      // only records in this state
  std::optional<Millis> older_than;   // only records created at least this long ago
  std::optional<Millis> newer_than;   // only records created less than this long ago
  bool include_expired = false;       // also records that expired but are not swept yet
  std::optional<Scope> after;         // only scopes after this one, for paging
  int64_t limit = 100;                // 1 to 10000
  // Only in_progress records whose lease has passed by the store's clock (the claims a takeover
  // may win: their holder stopped heartbeating). Default false.
  bool lapsed = false;
};

// One write of Store::ApplyLeaseBatch. Each kind means what the lease-mode call of the same name
// means, with the differences ApplyLeaseBatch states.
struct LeaseWrite {
  enum class Kind { kClaim, kHeartbeat, kComplete, kFailFinal, kRelease };
  Kind kind = Kind::kClaim;
  Scope scope;
  std::string fingerprint;  // kClaim
  // kClaim: who claims, a label for people (shown by `idem keys`, named in errors). Two claims
  // may share it (two processes configured alike, two requests with one X-Request-Id): it never
  // decides whose a record is.
  std::string owner;
  // Deprecated, not read: a record used to be recognised as a claim's own by its owner, which two
  // claimers could share and both be told they hold the key. Set claim_nonce instead.
  bool unique_owner = false;
  Millis lease{0};          // kClaim, kHeartbeat: the lease runs to the store's now + lease
  int64_t fence = 0;        // every kind but kClaim: the fence the writer holds
  // kComplete, kFailFinal: the outcome. kClaim: the claim's note, kept in the in_progress record
  // it wins (KeyRecord::response, new or taken over; an empty one clears an older note) until its
  // outcome replaces it; returned by Get and List. idem serve keeps there the request it forwards,
  // to recover the claim if its holder dies (docs/gateway.md, "Recovering lapsed claims").
  StoredResponse response;
  // kClaim: this claim attempt's nonce, kept in the in_progress record it wins
  // (KeyRecord::claim_nonce): a record in_progress with this nonce and fingerprint is this
  // claim's own, written by an earlier attempt whose acknowledgement was lost (see
  // ApplyLeaseBatch). Draw it with NewClaimNonce() (idem/uuid.h) for each claim attempt, send the
  // same write again with it, never take it from client input. Empty (default): the claim has
  // none, and a record it wrote blocks its retry like any other.
  std::string claim_nonce;
};

struct LeaseWriteResult {
  // This write's own status, with its single call's meanings: Aborted when the record is no
  // longer in_progress with the writer's fence; InvalidArgument for a malformed scope. A claim
  // that finds a live record is not an error (status OK, claimed false).
  absl::Status status;
  // kClaim: true when the caller holds the key now: a new record, an expired record replaced, or
  // an in_progress record of the same fingerprint whose lease had passed, taken over.
  bool claimed = false;
  bool taken_over = false;  // kClaim: the claim took over a lapsed lease
  // kClaim: the caller's new in_progress record when claimed; otherwise the live record that
  // blocked the claim, in any state (an in_progress one with its lease_until_ms, so the caller can
  // say when to retry or wait for it; another fingerprint means another request).
  KeyRecord record;
  // kClaim when claimed, kHeartbeat when OK: the lease's new end, by the store's clock.
  int64_t lease_until_ms = 0;
  // The store's clock when the write ran: compare lease_until_ms with this, never with the
  // caller's own clock (hosts sharing a store may disagree on the time).
  int64_t now_ms = 0;
};

class StoreTransaction;

// The bytes of `response` as Store::MaxResponseBytes counts them: its body, each header's name
// and value and 8 more per header, and 4 for its status.
inline int64_t StoredResponseBytes(const StoredResponse& response) {
  int64_t bytes = 4 + static_cast<int64_t>(response.body.size());
  for (const Header& header : response.headers) {
    bytes += 8 + static_cast<int64_t>(header.name.size() + header.value.size());
  }
  return bytes;
}

class Store {
 public:
  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;
  virtual ~Store() = default;

  // --- lease mode: each call commits on its own ---

  // Claims the key with a unique-constraint INSERT: at most one concurrent caller wins, with a new
  // fence (see "Fences"). A record that has expired counts as absent and is replaced.
  // Errors: InvalidArgument for a malformed scope; Unavailable when the database is busy or down.
  virtual absl::StatusOr<ClaimResult> Claim(const ClaimRequest& request) = 0;

  // Takes over an in_progress record whose lease has passed: a conditional UPDATE that succeeds
  // only while the record still has `expected_fence`, an expired lease and the request's
  // fingerprint (only the same request may take a claim over). Returns the record with a new
  // fence (greater than expected_fence), the new owner and a new lease.
  // Errors: FailedPrecondition when the live record has another fingerprint (it names another
  // request; nothing changes); Aborted when the fence moved or the lease is still live (someone
  // else won); NotFound when there is no live record.
  virtual absl::StatusOr<KeyRecord> TakeOver(const ClaimRequest& request,
                                             int64_t expected_fence) = 0;

  // Extends the lease of an in_progress record held with `fence` to now + lease.
  // Errors: Aborted when the record is no longer in_progress with this fence.
  virtual absl::Status Heartbeat(const Scope& scope, int64_t fence, Millis lease) = 0;

  // Records the outcome of an in_progress record held with `fence`: completed, or failed_final
  // for a deterministic failure. The record then expires after StoreOptions::retention.
  // Errors: Aborted when the record is no longer in_progress with this fence (nothing written);
  // OutOfRange for a response larger than MaxResponseBytes (nothing written, and never will be:
  // not to be retried).
  virtual absl::Status Complete(const Scope& scope, int64_t fence,
                                const StoredResponse& response) = 0;
  virtual absl::Status FailFinal(const Scope& scope, int64_t fence,
                                 const StoredResponse& response) = 0;

  // The most bytes of a response (as StoredResponseBytes counts them) that Complete and FailFinal
  // keep on this store, for a scope, fingerprint and owner within their limits: the NATS store's
  // servers take messages of at most their max_payload. 0: no limit of the store's own (SQL
  // stores keep far more than anything idem serve keeps).
  virtual int64_t MaxResponseBytes() const { return 0; }

  // Deletes an in_progress record held with `fence`, after a transient failure: the key becomes
  // absent and the next arrival runs the effect again. A key with no live record (absent,
  // expired, or released already: the retry of a release whose outcome was unknown) is OK:
  // nothing is held, as a release asks.
  // Errors: Aborted when the live record is another holder's (another fence) or finished.
  virtual absl::Status Release(const Scope& scope, int64_t fence) = 0;

  // Returns the live record of the scope. Errors: NotFound when absent or expired.
  virtual absl::StatusOr<KeyRecord> Get(const Scope& scope) = 0;

  // Deletes at most `max_rows` expired records (an in_progress record only once its lease has
  // passed too) and returns how many it deleted; call again until it returns less than max_rows.
  // A record a concurrent claim is turning live again is never deleted.
  virtual absl::StatusOr<int64_t> SweepExpired(int64_t max_rows) = 0;

  // --- lease mode, many writes in one commit (group commit) ---

  // Applies `writes` in one transaction with one durable commit and returns one result per write,
  // in the same order. Writes on one scope apply in the order given; each write keeps its single
  // call's meaning, and one write's failure leaves the others alone. Three differences from the
  // single calls, for callers that retry over a lost connection or meet in-flight duplicates:
  //  - kClaim takes over, within the same write, an in_progress record of the same fingerprint
  //    whose lease has passed (no separate TakeOver); a lapsed lease of another fingerprint is
  //    returned unclaimed, like a live one.
  //  - kComplete and kFailFinal are idempotent: on a record already finished with the same fence,
  //    state and response they return OK and change nothing.
  //  - kClaim with a claim_nonce that finds a live in_progress record of its claim_nonce and
  //    fingerprint returns it claimed, unchanged (its fence and lease end as stored; taken_over
  //    when that record took a lapsed lease over): it is this claim's own, written by an earlier
  //    attempt. The owner label plays no part: a claim of the same owner and another nonce (or
  //    none) is blocked by that record like any other (claimed false).
  // A result is returned only once the batch's commit is durable.
  // Lost acknowledgements: a call that returns Unavailable may have been applied (the message
  // says when its outcome is unknown: a connection lost during COMMIT, a JetStream write that
  // timed out). Send the same writes again: each is resolved by the record it finds, never
  // guessed. A claim with a claim_nonce finds its own record (above); a heartbeat of a claim
  // still in_progress with its fence extends the lease again and returns the new end; a complete
  // or fail_final finds its own outcome (above); a release finds the key not live (OK, as
  // Release). A record of another fence (taken over after a lapse, or released and claimed
  // again) is Aborted, as it would be for a first attempt: the writer has lost the key.
  // Errors (nothing of the batch is committed): Unavailable when the store is busy or down, or
  // the commit failed; its outcome is unknown when the message says so. On the NATS store each
  // write commits on its own, and a write that could not be applied gets its own Unavailable.
  virtual absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) = 0;

  // --- for operators (idem keys) ---

  // Returns the records `query` selects, with their stored responses. The default
  // implementation, for stores that cannot list, returns Unimplemented.
  // Errors: InvalidArgument for a limit outside 1..10000 or a negative age; Unavailable.
  virtual absl::StatusOr<std::vector<KeyRecord>> List(const KeyQuery& query);

  // Deletes the record of `scope` whatever its state, live or expired: the next arrival of the
  // key runs its effect again. A worker still holding the key then fails its fenced writes
  // (Aborted). The default implementation returns Unimplemented.
  // Errors: NotFound when there is no record; InvalidArgument for a malformed scope; Unavailable.
  virtual absl::Status Purge(const Scope& scope);

  // --- transaction mode ---

  // Opens a transaction. Errors: Unavailable when no connection can be had in lock_timeout.
  virtual absl::StatusOr<std::unique_ptr<StoreTransaction>> Begin() = 0;
};

// A transaction that can hold a key's claim beside the caller's own writes. Destroying it without
// Commit() rolls everything back.
class StoreTransaction : public Transaction {
 public:
  StoreTransaction() = default;
  StoreTransaction(const StoreTransaction&) = delete;
  StoreTransaction& operator=(const StoreTransaction&) = delete;

  // Claims the key inside this transaction, with a new fence (see "Fences"). An expired record
  // counts as absent and is replaced; an in_progress record whose lease has passed is taken over
  // when its fingerprint is `fingerprint`, and otherwise left alone and returned (claimed =
  // false), so the caller reports the mismatch. When another transaction is claiming the same
  // key right now, waits for it: if it commits, returns its record (claimed = false); if it rolls
  // back, claims. Until Commit() nobody else sees the claim.
  // Errors: Unavailable when the wait exceeds lock_timeout, or on a serialization failure,
  // deadlock or lost connection; the transaction must then be rolled back.
  virtual absl::StatusOr<ClaimResult> Claim(const Scope& scope, std::string_view fingerprint,
                                            std::string_view owner) = 0;

  // Records the final state (kCompleted or kFailedFinal) of a record this transaction claimed.
  // Errors: Aborted when the record is not in_progress with `fence`.
  virtual absl::Status Finish(const Scope& scope, int64_t fence, KeyState state,
                              const StoredResponse& response) = 0;

  // SAVEPOINT name / ROLLBACK TO SAVEPOINT name / RELEASE SAVEPOINT name.
  virtual absl::Status Savepoint(std::string_view name) = 0;
  virtual absl::Status RollbackToSavepoint(std::string_view name) = 0;
  virtual absl::Status ReleaseSavepoint(std::string_view name) = 0;

  // Commits. Errors: Unavailable when nothing was committed (the commit could not be made
  // durable, or the transaction was doomed, see Doomed()), or when the commit's outcome is
  // unknown (the connection was lost while COMMIT was under way; the message says "outcome is
  // unknown"): it may have committed, so look the key up, or retry with the same key, which
  // replays the outcome if it did; Internal when the transaction had failed (a statement failed
  // and was not rolled back to a savepoint) or was already ended; Aborted when an outcome that
  // Finish sent with the commit (PostgreSQL sends it then, in one round trip) found the claimed
  // record changed by the transaction's own SQL in a way the store could not see (a view or a
  // trigger): nothing was committed. A borrowed transaction (idem/borrowed_transaction.h) is
  // ended by its owner: FailedPrecondition, nothing done.
  virtual absl::Status Commit() = 0;
  // Rolls back. Safe to call more than once. A borrowed transaction: FailedPrecondition, as Commit.
  virtual absl::Status Rollback() = 0;

  // OK while the transaction can still commit; otherwise why it cannot, as only the store sets
  // it (an effect cannot forge it by returning a status): Unavailable when the database ended
  // or broke the transaction (disk full, I/O error, lost connection, serialization failure,
  // deadlock, lock timeout, a failed savepoint statement, a failed commit; for a borrowed
  // PostgreSQL transaction, also when the server aborted it after a statement its owner ran on
  // the connection failed); Internal when the transaction was ended or split outside the store
  // (through native_handle(), or by a borrowed transaction's owner). Once doomed, a transaction
  // stays doomed and every call but Rollback() returns this status; nothing of it is committed (a
  // borrowed one's owner must roll it back). The guard retries (GuardOptions::transient_retries)
  // and aborts a batch only for a doomed transaction.
  virtual absl::Status Doomed() const = 0;
};

// The rules of a transaction, the same on every store (the conformance suite checks them):
//  - Transaction-control SQL is refused with InvalidArgument and not run, whatever comments or
//    whitespace precede it: BEGIN, START, COMMIT, END, ABORT, ROLLBACK, PREPARE TRANSACTION, and
//    SAVEPOINT / RELEASE / ROLLBACK TO of the store's own savepoints (names starting "idem_",
//    reserved). An effect's own savepoints are fine.
//  - After a statement fails, the transaction is good only for rolling back, to a savepoint or
//    whole: any other call returns Internal ("an earlier statement failed") until then. A
//    ROLLBACK TO of the effect's own savepoint, run through Execute or Query, counts.
//  - A second Claim of a key the transaction itself holds returns it unclaimed (in_progress,
//    its fence unchanged), never takes it over: a nested guard call of that key is Aborted.
//  - A transaction the database ended by itself (SQLite after disk full or an I/O error, a lost
//    PostgreSQL connection) is doomed: it refuses every later statement instead of running it
//    outside the transaction.
//  - Through native_handle() an effect may run statements, never end the transaction: a commit
//    or rollback made there is noticed at the store's next call (SQLite turns such a commit into
//    a rollback) and dooms the transaction. On PostgreSQL a COMMIT followed by a new BEGIN made
//    through the handle cannot be noticed: never do it.

// Opens the store named by `uri`, applying any schema migrations it needs:
//   sqlite:PATH[?synchronous=full|normal][&integrity=off|quick|full]
//                                           the embedded store (a file; created if absent)
//   sqlite:///relative/path, sqlite:////absolute/path   the same, as SQLAlchemy writes them;
//                                           sqlite://NAME (a "host") is refused as ambiguous
//   postgresql://user@host:port/db?...      the shared store (libpq syntax; postgres:// too)
// Errors: InvalidArgument for a URI of no known scheme or a malformed one; NotFound for a SQLite
// file that does not exist when options.create_if_missing is false; PermissionDenied for a path
// that cannot be written; DataLoss for a corrupt file (found at open, or by the integrity check
// the URI asks for); FailedPrecondition for a database that is not idem's or whose schema is
// newer than this idem; Unavailable for a store locked past options.lock_timeout or a server that
// cannot be reached. Nothing is half-written on failure. No error message carries a password.
absl::StatusOr<std::unique_ptr<Store>> OpenStore(std::string_view uri,
                                                 const StoreOptions& options = {});

// Returns `uri` with every password hidden as "***": the password of a URI's user info, password
// and sslpassword query parameters, and the values of password / sslpassword keywords of a libpq
// key=value string, quoted or not; from a malformed part of a key=value string on, everything.
// Use it wherever a store URI is printed, logged or exported.
std::string RedactStoreUri(std::string_view uri);

}  // namespace idem

#endif  // IDEM_STORE_H_
