// Transaction mode on SQLite: one pooled connection inside BEGIN IMMEDIATE, holding a key's claim
// beside the caller's own writes (idem/store.h, StoreTransaction).
//
// BEGIN IMMEDIATE takes SQLite's single write lock at Begin(), so a second transaction — in this
// process or another — waits (up to lock_timeout) at its own Begin() until the first commits or
// rolls back, and then sees the outcome. Lock upgrades, and the deadlocks they cause, never
// happen.
//
// Thread-safety: belongs to one thread, as idem/transaction.h says.
#ifndef IDEM_STORE_SQLITE_SQLITE_TRANSACTION_H_
#define IDEM_STORE_SQLITE_SQLITE_TRANSACTION_H_

#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/sqlite/connection_pool.h"
#include "store/sqlite/transaction_claims.h"

namespace idem::sqlite {

class SqliteTransaction final : public StoreTransaction {
 public:
  // Runs BEGIN IMMEDIATE on the leased connection. `clock` must outlive the transaction.
  // Errors: Unavailable when the write lock stayed held past lock_timeout.
  static absl::StatusOr<std::unique_ptr<SqliteTransaction>> Begin(ConnectionPool::Lease lease,
                                                                  const Clock& clock,
                                                                  Millis retention);
  // Wraps the transaction its owner opened on `lease`'s connection (idem/borrowed_transaction.h):
  // no BEGIN, no hooks; Commit() and Rollback() are refused, the owner ends it. `clock` must
  // outlive the transaction. Errors: FailedPrecondition when no transaction is open.
  static absl::StatusOr<std::unique_ptr<SqliteTransaction>> Borrow(ConnectionPool::Lease lease,
                                                                   const Clock& clock,
                                                                   Millis retention);
  ~SqliteTransaction() override;

  absl::StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                            std::span<const SqlValue> params) override;
  absl::StatusOr<int64_t> Execute(std::string_view sql, std::span<const SqlValue> params) override;
  void* native_handle() override;

  absl::StatusOr<ClaimResult> Claim(const Scope& scope, std::string_view fingerprint,
                                    std::string_view owner) override;
  absl::Status Finish(const Scope& scope, int64_t fence, KeyState state,
                      const StoredResponse& response) override;
  absl::Status Savepoint(std::string_view name) override;
  absl::Status RollbackToSavepoint(std::string_view name) override;
  absl::Status ReleaseSavepoint(std::string_view name) override;
  absl::Status Commit() override;
  absl::Status Rollback() override;
  absl::Status Doomed() const override { return doomed_; }

 private:
  SqliteTransaction(ConnectionPool::Lease lease, const Clock& clock, Millis retention,
                    bool borrowed)
      : lease_(std::move(lease)),
        clock_(clock),
        retention_(retention),
        borrowed_(borrowed),
        claims_(/*defer=*/!borrowed) {}

  // Refuses a call on a transaction that ended, is doomed, or (unless `after_failure_ok`) had a
  // statement fail; notices a transaction ended outside the store (and dooms it).
  absl::Status Gate(std::string_view operation, bool after_failure_ok = false);
  // Records how a statement of the transaction went: a failure marks it failed, and dooms it
  // when the database broke or ended the transaction, or when `dooming` (savepoint statements).
  absl::Status Track(absl::Status status, bool dooming = false);
  void Doom(absl::Status why);
  // SQLite's commit and rollback hooks, set while the transaction is open: a commit the store
  // did not ask for (through native_handle()) is turned into a rollback, and either is noted.
  static int OnCommit(void* self);
  static void OnRollback(void* self);
  void SetHooks(bool on);
  void End();
  // Prepares `sql` and binds `params` to $1..$N. Errors: InvalidArgument for SQL SQLite
  // rejects, or parameters that do not match the $N the SQL uses.
  absl::StatusOr<Statement> PrepareBound(std::string_view sql, std::span<const SqlValue> params);
  absl::Status RunSavepointCommand(std::string_view verb, std::string_view name);
  // After `sql` ran: a ROLLBACK TO a savepoint makes a failed transaction usable again.
  void ClearFailureIfRolledBack(std::string_view sql);
  // Writes the deferred claims (TransactionClaims::Flush) before SQL that could see them.
  absl::Status StopDeferring();
  // After the caller's `sql` succeeded: follows it when it is a savepoint statement.
  absl::Status FollowSavepoint(std::string_view sql);

  ConnectionPool::Lease lease_;
  const Clock& clock_;
  const Millis retention_;
  const bool borrowed_;  // its owner began it and ends it (Borrow)
  bool open_ = true;
  bool failed_ = false;         // a statement failed since the last rollback to a savepoint
  bool ending_ = false;         // the store itself is committing or rolling back
  bool ended_outside_ = false;  // SQLite committed or rolled back without the store asking
  absl::Status doomed_;
  // Claims of keys without a record, their fences and rows (transaction_claims.h); a borrowed
  // transaction, whose commit the store does not see, claims with counted fences instead.
  TransactionClaims claims_;
};

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_SQLITE_TRANSACTION_H_
