// Claims of new keys in an SQLite transaction of the store's own, written once with their
// outcome instead of inserted in_progress and then updated (SqliteTransaction).
//
// Why it is safe: BEGIN IMMEDIATE holds SQLite's one write lock from Begin() to the end, so no
// other writer can insert the key in between; the claim's record is invisible to everyone else
// until commit either way. What the deferral saves is the work nobody can observe: the
// in_progress row, its entry in the in-progress index, and the fence counter's write. A claim
// still unfinished when the transaction commits, or when SQL the store cannot follow runs (a
// savepoint statement of the caller's, the native handle), is written in_progress first, exactly
// as an immediate claim would have been (Flush).
//
// Fences: a deferred claim takes the counter's next value without consuming it (claims of one
// transaction take successive values); Flush consumes it. A fence is compared only against an
// in_progress record, and a deferred claim's record is never in_progress outside its
// transaction, so a later claim of the same key that happens to draw the same number cannot be
// confused with it: every record that is ever in_progress outside a transaction has a fence
// drawn from, and recorded in, the counter.
//
// Savepoints taken through the store are followed: rolling back to one forgets the claims made
// after it and reopens claims finished after it.
//
// Thread-safety: belongs to its transaction's thread.
#ifndef IDEM_STORE_SQLITE_DEFERRED_CLAIMS_H_
#define IDEM_STORE_SQLITE_DEFERRED_CLAIMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/record.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

class DeferredClaims final {
 public:
  DeferredClaims() = default;
  DeferredClaims(const DeferredClaims&) = delete;
  DeferredClaims& operator=(const DeferredClaims&) = delete;

  // The unfinished deferred claim of `scope`, or null.
  const KeyRecord* Unfinished(const Scope& scope) const;

  // Looks `scope` up: the fence a new claim takes, or nullopt when the key has a record (the
  // caller then claims it the usual way). Errors: DataLoss when the fence counter has no row;
  // others as the statement's.
  absl::StatusOr<std::optional<int64_t>> FenceForNewKey(Connection& conn, const Scope& scope);

  // Remembers a claim of a key FenceForNewKey found without a record.
  void Add(KeyRecord record);

  // Writes the outcome of the unfinished deferred claim of `scope` as its record. Returns false,
  // doing nothing, when `scope` has no unfinished deferred claim. Errors: Aborted for another
  // fence (nothing written); others as the statement's.
  absl::StatusOr<bool> Finish(Connection& conn, const Scope& scope, int64_t fence, KeyState state,
                              const StoredResponse& response, int64_t now_ms, int64_t expires_ms);

  // Writes every unfinished claim as its in_progress record with its fence, recorded as used in
  // the counter, and stops deferring: later claims are immediate.
  absl::Status Flush(Connection& conn);

  // Follows the store's savepoint statements, after each succeeded.
  void OnSavepoint(std::string_view name);
  void OnRollbackTo(std::string_view name);
  void OnRelease(std::string_view name);

  // Whether claims are still deferred (not after Flush).
  bool deferring() const { return deferring_; }

 private:
  struct Entry {
    KeyRecord record;
    uint64_t claimed_at;
    uint64_t finished_at = 0;  // 0: unfinished
  };
  struct Mark {
    std::string name;
    uint64_t at;
  };

  Entry* Find(const Scope& scope);

  std::vector<Entry> entries_;
  std::vector<Mark> savepoints_;
  uint64_t clock_ = 0;          // orders claims, finishes and savepoints
  int64_t next_fence_ = 0;      // the next deferred claim's fence; 0: read it from the counter
  bool deferring_ = true;
};

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_DEFERRED_CLAIMS_H_
