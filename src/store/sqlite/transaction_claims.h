// Claims of keys that have no record, made in an SQLite transaction the store began itself
// (SqliteTransaction; not a borrowed one, whose commit the store does not see).
//
// Why they need neither a counted fence nor, at first, a row: BEGIN IMMEDIATE holds SQLite's one
// write lock from Begin() to the end, so no other writer can claim the key meanwhile, and nobody
// else sees the claim before commit. So:
//  - Fence: the counter's next value (idem_fence.last + 1), read but not advanced (claims of one
//    transaction take successive values). The counter is advanced at Commit() only past the
//    fences of claims still unfinished then, the only ones ever seen in_progress outside the
//    transaction, where a fence is compared. A finished record can so hold a fence above the
//    counter; every later claim of its key still gets a greater one, because replacing a record
//    takes at least its fence + 1 and deleting one advances the counter past it (key_table.h).
//  - Row (while deferring): the claim is kept in memory and written once, finished, by Finish
//    (one INSERT): no in_progress row, no in-progress index entry. It is written in_progress
//    first wherever it could be seen (Flush): at commit while unfinished, and before SQL naming
//    idem_keys or idem_fence, a savepoint statement of the caller's, or the native handle; claims
//    are immediate from then on.
//
// Savepoints taken through the store are followed by the order of events (a clock): rolling back
// to one forgets the claims made after it, reopens claims finished after it, and writes again the
// rows of claims made before it but written after it (the rollback took those rows with it).
//
// Thread-safety: belongs to its transaction's thread.
#ifndef IDEM_STORE_SQLITE_TRANSACTION_CLAIMS_H_
#define IDEM_STORE_SQLITE_TRANSACTION_CLAIMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/record.h"
#include "idem/store.h"
#include "store/sqlite/key_table.h"
#include "store/sqlite/sqlite_connection.h"

namespace idem::sqlite {

class TransactionClaims final {
 public:
  // `defer`: keep claims in memory until finished (see above); false: write them at once.
  explicit TransactionClaims(bool defer) : deferring_(defer) {}
  TransactionClaims(const TransactionClaims&) = delete;
  TransactionClaims& operator=(const TransactionClaims&) = delete;

  // Claims `p.scope` when it has no record (and no unwritten claim of this transaction): the
  // result, or nullopt when the key has a record, which the caller then claims the usual way
  // (ClaimKey, with a counted fence of at least MinFence()). Errors: DataLoss when the fence
  // counter has no row; others as the statements'.
  absl::StatusOr<std::optional<ClaimResult>> ClaimNewKey(Connection& conn, const ClaimParams& p);

  // The least fence a claim of this transaction may take: above every one handed out so far.
  int64_t MinFence() const { return next_fence_; }
  // Notes a fence handed out by the caller's own claim.
  void NoteFence(int64_t fence);

  // Records the outcome of a claim of this transaction made by ClaimNewKey: returns how many
  // rows changed (1, or 0 when its row no longer holds `fence`), or nullopt when `scope` has no
  // such unfinished claim (the caller writes the outcome the usual way). Errors: Aborted when an
  // unwritten claim holds another fence (nothing written); others as the statement's.
  absl::StatusOr<std::optional<int64_t>> Finish(Connection& conn, const Scope& scope,
                                                int64_t fence, KeyState state,
                                                const StoredResponse& response, int64_t now_ms,
                                                int64_t expires_ms);

  // Writes every unwritten unfinished claim as its in_progress record and stops deferring.
  absl::Status Flush(Connection& conn);

  // Before COMMIT: Flush, then advances the fence counter past every claim still unfinished.
  absl::Status BeforeCommit(Connection& conn);

  // Follow the store's own savepoint statements, after each succeeded. OnRollbackTo writes again
  // the rows the rollback took (unless deferring); an error must doom the transaction.
  void OnSavepoint(std::string_view name);
  absl::Status OnRollbackTo(Connection& conn, std::string_view name);
  void OnRelease(std::string_view name);
  // After SQL the store cannot follow (the native handle) may have rolled back to a savepoint:
  // any finish may have been undone, so every claim's fence is counted at commit (never wrong,
  // only a write more).
  void OnUnfollowedRollback();

  bool deferring() const { return deferring_; }

  // Whether `sql` names idem_keys or idem_fence (in any case): SQL that must see the claims as
  // rows. Other tables of the store's (idem_outbox, idem_inbox) hold nothing of a claim.
  static bool NamesKeyTables(std::string_view sql);

 private:
  struct Entry {
    KeyRecord record;      // as claimed: in_progress
    uint64_t claimed_at;   // clock_ values; 0: not (yet, or any more)
    uint64_t written_at;   // since when a row of it exists (in_progress, or finished by Finish)
    uint64_t finished_at;
  };
  struct Mark {
    std::string name;
    uint64_t at;
  };

  // The latest unfinished claim of `scope`, or null.
  Entry* Unfinished(const Scope& scope);
  absl::Status Write(Connection& conn, Entry& entry);

  std::vector<Entry> entries_;
  std::vector<Mark> savepoints_;
  uint64_t clock_ = 0;      // orders claims, writes, finishes and savepoints
  int64_t next_fence_ = 0;  // every fence handed out in this transaction is below it
  bool deferring_;
  bool count_every_fence_ = false;  // OnUnfollowedRollback
};

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_TRANSACTION_CLAIMS_H_
