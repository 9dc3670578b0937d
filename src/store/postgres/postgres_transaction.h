// Transaction mode of the PostgreSQL store: one pooled connection, READ COMMITTED, holding the
// key's claim beside the caller's writes.
//
// BEGIN and each SAVEPOINT are not sent on their own: they go out in the same round trip as the
// next statement (libpq pipeline mode). Savepoints are tracked here: one taken before the
// transaction sent anything is never sent (rolling back to it is rolling back the transaction and
// beginning again; releasing it is free), and a RELEASE still pending at COMMIT is dropped (COMMIT
// releases every savepoint). So the guard's transaction costs the server no more statements than
// its own work: BEGIN, claim, SAVEPOINT, effect, outcome, COMMIT.
//
// The outcome of a key this transaction claimed is deferred the same way, to go out with COMMIT
// (or the next statement), when nothing since the claim can have changed the claimed row: the
// claim's row lock keeps every other transaction off it, so only this transaction's own SQL
// naming idem_ tables, a rollback to a savepoint, the native handle or the clock passing the
// record's expiry could, and each of those sends the outcome at once instead. The deferred
// outcome is checked on the server all the same (it fails unless it changed the row, and
// PostgreSQL then skips the COMMIT behind it): a miss stops the commit, never commits the effect
// without its outcome. So Guard::Run costs three round trips: BEGIN + claim, SAVEPOINT + effect,
// outcome + COMMIT.
//
// A borrowed transaction (Borrow) defers nothing: its owner, and an effect, write on the
// connection directly, so each SAVEPOINT and RELEASE is sent when it is called and none is ever
// left queued for a later statement.
//
// Thread-safety: belongs to one thread.
#ifndef IDEM_STORE_POSTGRES_POSTGRES_TRANSACTION_H_
#define IDEM_STORE_POSTGRES_POSTGRES_TRANSACTION_H_

#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "idem/store.h"
#include "store/postgres/pg_pool.h"

namespace idem::postgres {

class PostgresTransaction final : public StoreTransaction {
 public:
  PostgresTransaction(PooledConnection conn, const StoreOptions& options, Clock& clock);
  // Wraps the transaction its owner opened on `conn` (idem/borrowed_transaction.h): no BEGIN;
  // Commit() and Rollback() are refused, the owner ends it; of `options` only retention is used.
  // Errors: FailedPrecondition when `conn` is not idle inside a transaction; Unavailable when it
  // is broken.
  static absl::StatusOr<std::unique_ptr<PostgresTransaction>> Borrow(PooledConnection conn,
                                                                     const StoreOptions& options,
                                                                     Clock& clock);
  ~PostgresTransaction() override;

  absl::StatusOr<std::vector<SqlRow>> Query(std::string_view sql,
                                            std::span<const SqlValue> params) override;
  absl::StatusOr<int64_t> Execute(std::string_view sql, std::span<const SqlValue> params) override;
  // The PGconn* with this transaction already begun; null once it ended.
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
  // The connection, once the transaction is known to be open; Internal after it ended, the doom
  // once doomed; notices a transaction ended outside the store (and dooms it).
  // `sending`: the caller is about to send a statement (so BEGIN goes out with it).
  // A borrowed transaction that PostgreSQL aborted since idem's last statement (a statement of
  // its owner's failed) is doomed Unavailable, unless `rolling_back` (to a savepoint, which is
  // what such a transaction is good for).
  absl::StatusOr<PgConnection*> Open(bool sending = true, bool rolling_back = false);
  absl::StatusOr<Result> Run(std::string_view sql, std::span<const SqlValue> params,
                             std::string_view what);

  // Records how a statement went: dooms the transaction when the database broke it, when a
  // deferred statement (SAVEPOINT, RELEASE) failed, or when `dooming`.
  absl::Status Track(absl::Status status, bool dooming = false);
  void Doom(absl::Status why);

  // Queues `sql` (SAVEPOINT, RELEASE) to go out with the next statement, or, borrowed, sends it
  // now. Errors (borrowed): the statement's; the transaction is then doomed.
  absl::Status SendSavepointStatement(PgConnection& conn, std::string sql);
  // Queues BEGIN (and the timeouts, where the caller may have changed them) for the next send.
  void DeferBegin(PgConnection& conn);
  // The index of the topmost savepoint called `name`. Errors: InvalidArgument when there is none.
  absl::StatusOr<size_t> FindSavepoint(std::string_view name) const;

  // Forgets the claims whose outcome could be deferred (see the file comment): their rows may
  // have changed in ways the transaction cannot see.
  void ForgetClaims() { claims_.clear(); }
  // The Aborted error for a deferred outcome that did not change its record, else `status`.
  absl::Status OutcomeNotRecorded(absl::Status status) const;

  struct SavepointEntry {
    std::string name;
    bool on_server;  // false: taken before anything was sent; exists only here
  };

  struct Borrowed {};
  PostgresTransaction(Borrowed, PooledConnection conn, const StoreOptions& options, Clock& clock);

  // A key this transaction claimed (and locked) whose row nothing has touched since.
  struct HeldClaim {
    Scope scope;
    int64_t fence = 0;
    int64_t expires_ms = 0;
  };

  std::optional<PooledConnection> conn_;    // empty once committed or rolled back
  std::vector<SavepointEntry> savepoints_;  // bottom first: the not-on-server ones, then the rest
  StoreOptions options_;
  Clock& clock_;
  std::vector<HeldClaim> claims_;  // whose outcome may be deferred
  bool handle_taken_ = false;      // native_handle() was called: defer no outcome
  bool sent_ = false;              // BEGIN has gone to the server
  bool borrowed_ = false;          // its owner began it and ends it (Borrow)
  // Borrowed: idem's last statement left the transaction failed (PQTRANS_INERROR), so a failed
  // state seen at the next call is idem's own, not one its owner brought about.
  bool left_in_error_ = false;
  absl::Status doomed_;
};

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_POSTGRES_TRANSACTION_H_
