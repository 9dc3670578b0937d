// The embedded store: lease mode and transaction mode over one SQLite file (idem/store.h).
#include "idem/sqlite_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>

#include "common/status_macros.h"
#include "core/key_query.h"
#include "core/lease_length.h"
#include "core/retried_write.h"
#include "core/stale_fence.h"
#include "idem/key.h"
#include "store/sqlite/connection_pool.h"
#include "store/sqlite/key_table.h"
#include "store/sqlite/sqlite_integrity.h"
#include "store/sqlite/sqlite_lease_batch.h"
#include "store/sqlite/sqlite_options.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/sqlite_transaction.h"

namespace idem {
namespace {

using sqlite::ClaimParams;
using sqlite::Connection;
using sqlite::ConnectionPool;

// Runs `body` inside BEGIN IMMEDIATE … COMMIT on `conn`: writers queue on SQLite's write lock
// (up to lock_timeout) instead of failing on a lock upgrade. Rolls back when anything fails.
absl::Status InWriteTransaction(Connection& conn, const std::function<absl::Status()>& body) {
  IDEM_RETURN_IF_ERROR(conn.Run("BEGIN IMMEDIATE"));
  absl::Status status = body();
  if (status.ok()) status = conn.Run("COMMIT");
  if (!status.ok() && conn.InTransaction()) conn.Run("ROLLBACK").IgnoreError();
  return status;
}

class SqliteStore final : public Store {
 public:
  SqliteStore(std::shared_ptr<ConnectionPool> pool, const Clock& clock, const HostClock* host_clock,
              Millis retention)
      : pool_(std::move(pool)), clock_(clock), host_clock_(host_clock), retention_(retention) {}

  absl::StatusOr<ClaimResult> Claim(const ClaimRequest& request) override;
  absl::StatusOr<KeyRecord> TakeOver(const ClaimRequest& request, int64_t expected_fence) override;
  absl::Status Heartbeat(const Scope& scope, int64_t fence, Millis lease) override;
  absl::Status Complete(const Scope& scope, int64_t fence,
                        const StoredResponse& response) override {
    return Finish(scope, fence, KeyState::kCompleted, response);
  }
  absl::Status FailFinal(const Scope& scope, int64_t fence,
                         const StoredResponse& response) override {
    return Finish(scope, fence, KeyState::kFailedFinal, response);
  }
  absl::Status Release(const Scope& scope, int64_t fence) override;
  absl::StatusOr<KeyRecord> Get(const Scope& scope) override;
  absl::StatusOr<int64_t> SweepExpired(int64_t max_rows) override;
  absl::StatusOr<std::vector<KeyRecord>> List(const KeyQuery& query) override;
  absl::Status Purge(const Scope& scope) override;
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    if (writes.empty()) return std::vector<LeaseWriteResult>();
    IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
    absl::StatusOr<std::vector<LeaseWriteResult>> results =
        sqlite::ApplyLeaseBatch(*conn, clock_, host_clock_, retention_, writes);
    if (results.ok() && EndsNotes(writes, *results)) ScrubEndedNotes(*conn);
    return results;
  }
  absl::StatusOr<std::unique_ptr<StoreTransaction>> Begin() override;

 private:
  absl::Status Finish(const Scope& scope, int64_t fence, KeyState state,
                      const StoredResponse& response);
  // Runs `write` (which returns the rows it changed) in its own write transaction; 0 rows means
  // the caller's fence is stale: Aborted, nothing changed.
  absl::Status FencedWrite(
      const Scope& scope, int64_t fence, std::string_view operation,
      const std::function<absl::StatusOr<int64_t>(Connection&, int64_t)>& write);
  // A claim at wall time `now`, its lease on the host clock read with it.
  ClaimParams Params(const ClaimRequest& request, int64_t now) const {
    const int64_t lease_until = now + request.lease.count();
    return ClaimParams{request.scope, request.fingerprint,
                       request.owner, now,
                       lease_until,   std::max(now + retention_.count(), lease_until),
                       HostNow()};
  }

  // The host clock's reading, which leases run on; none without a host clock.
  HostTime HostNow() const { return host_clock_ != nullptr ? host_clock_->Now() : HostTime{}; }

  // Whether `writes` (applied with `results`) ended a key whose record may have held a note (a
  // claim's request, docs/sqlite-store.md): an outcome or a release that took, on a store through
  // which a note was ever written. Remembers the notes `writes` wrote.
  bool EndsNotes(std::span<const LeaseWrite> writes, const std::vector<LeaseWriteResult>& results) {
    bool ended = false;
    for (size_t i = 0; i < writes.size(); ++i) {
      const LeaseWrite& w = writes[i];
      if (w.kind == LeaseWrite::Kind::kClaim && results[i].claimed && w.response.status != 0)
        notes_written_.store(true, std::memory_order_relaxed);
      if (results[i].status.ok() &&
          (w.kind == LeaseWrite::Kind::kComplete || w.kind == LeaseWrite::Kind::kFailFinal ||
           w.kind == LeaseWrite::Kind::kRelease))
        ended = true;
    }
    return ended && notes_written_.load(std::memory_order_relaxed);
  }

  // Leaves no readable copy of an ended note in the store's files before the batch's results go
  // back (so also none once its client was answered, should the process be killed then): the
  // connections run with secure_delete, which zeroes the bytes an outcome or a release frees, and
  // this checkpoint copies the zeroed pages into the database file and truncates the WAL, which
  // held every earlier version of the note's page. One per batch, only on stores that keep notes.
  // A checkpoint that could not finish (a reader still on the WAL past lock_timeout) is done by
  // the next batch's.
  static void ScrubEndedNotes(Connection& conn) {
    conn.Exec("PRAGMA wal_checkpoint(TRUNCATE)").IgnoreError();
  }

  std::atomic<bool> notes_written_{false};

  std::shared_ptr<ConnectionPool> pool_;
  const Clock& clock_;
  const HostClock* const host_clock_;  // null: leases on clock_ alone
  const Millis retention_;
};

absl::StatusOr<ClaimResult> SqliteStore::Claim(const ClaimRequest& request) {
  IDEM_RETURN_IF_ERROR(ValidateScope(request.scope));
  IDEM_RETURN_IF_ERROR(CheckLeaseLength(request.lease));
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  ClaimResult result;
  IDEM_RETURN_IF_ERROR(InWriteTransaction(*conn, [&]() -> absl::Status {
    // Read the time under the write lock: the wait for it may have been long.
    IDEM_ASSIGN_OR_RETURN(result, sqlite::ClaimKey(*conn, Params(request, clock_.NowMillis()),
                                                   /*take_over_lapsed=*/false));
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<KeyRecord> SqliteStore::TakeOver(const ClaimRequest& request,
                                                int64_t expected_fence) {
  IDEM_RETURN_IF_ERROR(ValidateScope(request.scope));
  IDEM_RETURN_IF_ERROR(CheckLeaseLength(request.lease));
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  KeyRecord record;
  IDEM_RETURN_IF_ERROR(InWriteTransaction(*conn, [&]() -> absl::Status {
    const int64_t now = clock_.NowMillis();
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> taken,
                          sqlite::TakeOverKey(*conn, Params(request, now), expected_fence));
    if (taken.has_value()) {
      record = *std::move(taken);
      return absl::OkStatus();
    }
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live,
                          sqlite::SelectLive(*conn, request.scope, now));
    if (!live.has_value()) {
      return absl::NotFoundError(
          fmt::format("key '{}' of tenant '{}' has no live record to take over; claim it instead",
                      request.scope.key, request.scope.tenant));
    }
    if (live->fingerprint != request.fingerprint) return TakeOverMismatchError(request.scope);
    return absl::AbortedError(fmt::format(
        "cannot take over key '{}' of tenant '{}' at fence {}: it is {} with fence {}, lease "
        "until {} (now {}); someone else holds or finished it",
        request.scope.key, request.scope.tenant, expected_fence,
        live->state == KeyState::kInProgress ? "in_progress" : "finished", live->fence,
        live->lease_until_ms, now));
  }));
  return record;
}

absl::Status SqliteStore::FencedWrite(
    const Scope& scope, int64_t fence, std::string_view operation,
    const std::function<absl::StatusOr<int64_t>(Connection&, int64_t)>& write) {
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  return InWriteTransaction(*conn, [&]() -> absl::Status {
    const int64_t now = clock_.NowMillis();
    IDEM_ASSIGN_OR_RETURN(int64_t changed, write(*conn, now));
    if (changed == 1) return absl::OkStatus();
    return sqlite::StaleFenceError(*conn, scope, fence, now, operation);
  });
}

absl::Status SqliteStore::Heartbeat(const Scope& scope, int64_t fence, Millis lease) {
  IDEM_RETURN_IF_ERROR(CheckLeaseLength(lease));
  return FencedWrite(scope, fence, "heartbeat", [&](Connection& conn, int64_t now) {
    return sqlite::ExtendLease(conn, scope, fence, now, now + lease.count(), HostNow());
  });
}

absl::Status SqliteStore::Finish(const Scope& scope, int64_t fence, KeyState state,
                                 const StoredResponse& response) {
  return FencedWrite(scope, fence, "recording the outcome", [&](Connection& conn, int64_t now) {
    return sqlite::RecordOutcome(conn, scope, fence, state, response, now,
                                 now + retention_.count());
  });
}

absl::Status SqliteStore::Release(const Scope& scope, int64_t fence) {
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  return InWriteTransaction(*conn, [&]() -> absl::Status {
    const int64_t now = clock_.NowMillis();
    IDEM_ASSIGN_OR_RETURN(int64_t changed, sqlite::DeleteClaim(*conn, scope, fence, now));
    if (changed == 1) return absl::OkStatus();
    // Nothing live is released already (a retry of a release that went through included).
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, sqlite::SelectLive(*conn, scope, now));
    return UnchangedRelease({.kind = LeaseWrite::Kind::kRelease, .scope = scope, .fence = fence},
                            live);
  });
}

absl::StatusOr<KeyRecord> SqliteStore::Get(const Scope& scope) {
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live,
                        sqlite::SelectLive(*conn, scope, clock_.NowMillis()));
  if (live.has_value()) return *std::move(live);
  return absl::NotFoundError(
      fmt::format("key '{}' of tenant '{}' has no live record", scope.key, scope.tenant));
}

absl::StatusOr<int64_t> SqliteStore::SweepExpired(int64_t max_rows) {
  if (max_rows <= 0) {
    return absl::InvalidArgumentError(
        fmt::format("max_rows is {}; sweep at least one row per call, e.g. 1000", max_rows));
  }
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  int64_t deleted = 0;
  IDEM_RETURN_IF_ERROR(InWriteTransaction(*conn, [&]() -> absl::Status {
    IDEM_ASSIGN_OR_RETURN(deleted,
                          sqlite::DeleteExpired(*conn, clock_.NowMillis(), HostNow(), max_rows));
    return absl::OkStatus();
  }));
  return deleted;
}

absl::StatusOr<std::vector<KeyRecord>> SqliteStore::List(const KeyQuery& query) {
  IDEM_RETURN_IF_ERROR(ValidateKeyQuery(query));
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  return sqlite::SelectMany(*conn, query, clock_.NowMillis(), HostNow());
}

absl::Status SqliteStore::Purge(const Scope& scope) {
  IDEM_RETURN_IF_ERROR(ValidateScope(scope));
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  int64_t deleted = 0;
  IDEM_RETURN_IF_ERROR(InWriteTransaction(*conn, [&]() -> absl::Status {
    IDEM_ASSIGN_OR_RETURN(deleted, sqlite::DeleteAny(*conn, scope));
    return absl::OkStatus();
  }));
  if (deleted == 0) {
    return absl::NotFoundError(
        fmt::format("key '{}' of tenant '{}' has no record", scope.key, scope.tenant));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<StoreTransaction>> SqliteStore::Begin() {
  IDEM_ASSIGN_OR_RETURN(ConnectionPool::Lease conn, pool_->Acquire());
  IDEM_ASSIGN_OR_RETURN(auto tx,
                        sqlite::SqliteTransaction::Begin(std::move(conn), clock_, retention_));
  return std::unique_ptr<StoreTransaction>(std::move(tx));
}

// Opens the file, refuses one that is not idem's or is newer, then migrates. Nothing is written
// before the checks pass.
absl::StatusOr<std::unique_ptr<Store>> OpenChecked(const std::string& path,
                                                   const sqlite::OpenSettings& settings) {
  IDEM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                        Connection::OpenUnconfigured(path, settings.connection.lock_timeout));
  if (settings.integrity != sqlite::IntegrityCheck::kOff) {
    IDEM_RETURN_IF_ERROR(sqlite::RunIntegrityCheck(
        *conn, path, settings.integrity == sqlite::IntegrityCheck::kFull));
  }
  IDEM_ASSIGN_OR_RETURN(int64_t version, sqlite::CheckSchema(*conn, path));
  IDEM_RETURN_IF_ERROR(conn->Configure(path, settings.connection));
  if (version < sqlite::LatestSchemaVersion()) {
    IDEM_RETURN_IF_ERROR(sqlite::MigrateSchema(*conn, path, settings.clock->NowMillis()));
  }
  auto pool = std::make_shared<ConnectionPool>(path, settings.connection, settings.max_connections);
  pool->Adopt(std::move(conn));
  return std::make_unique<SqliteStore>(std::move(pool), *settings.clock, settings.host_clock,
                                       settings.retention);
}

// Creates `path` empty, readable and writable by its owner only (0600, whatever the umask), unless
// it exists: the store keeps requests (a recovering route's notes) and answers. SQLite gives the
// -wal and -shm files it creates the database file's mode. Failures are left to SQLite's open,
// which reports them.
void CreateOwnerOnly(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return;
  [[maybe_unused]] const int exact = ::fchmod(fd, 0600);  // a umask cannot take the owner's bits
  ::close(fd);
}

absl::Status MustExist(const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error)) return absl::OkStatus();
  return absl::NotFoundError(fmt::format(
      "the SQLite database '{}' does not exist (nothing was created); check the path", path));
}

// The rest of OpenSqliteStore, once its settings are resolved.
absl::StatusOr<std::unique_ptr<Store>> OpenResolved(sqlite::OpenSettings settings,
                                                    Millis lock_timeout) {
  if (!settings.create_if_missing) IDEM_RETURN_IF_ERROR(MustExist(settings.path));
  if (settings.create_if_missing) CreateOwnerOnly(settings.path);
  // Nothing is half-written on failure: the checks run before any write, and the migrations
  // apply in one transaction. A file this call created stays behind empty, and a later open
  // sets it up.
  //
  // While several processes open a new file at once, SQLite can answer SQLITE_BUSY without
  // calling the busy handler (switching to WAL, recovering the WAL index), so the open itself
  // waits out such a lock, within lock_timeout, as every later statement does.
  const auto deadline = std::chrono::steady_clock::now() + lock_timeout;
  for (int64_t pause_ms = 1;; pause_ms = std::min<int64_t>(pause_ms * 2, 50)) {
    absl::StatusOr<std::unique_ptr<Store>> store = OpenChecked(settings.path, settings);
    if (store.ok() || !absl::IsUnavailable(store.status()) ||
        std::chrono::steady_clock::now() + Millis(pause_ms) > deadline) {
      return store;
    }
    std::this_thread::sleep_for(Millis(pause_ms));
  }
}

}  // namespace

absl::Status CheckSqliteIntegrity(std::string_view path, bool full, Millis lock_timeout) {
  const std::string file(path);
  IDEM_RETURN_IF_ERROR(MustExist(file));
  IDEM_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                        Connection::OpenUnconfigured(file, lock_timeout));
  return sqlite::RunIntegrityCheck(*conn, file, full);
}

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStore(std::string_view path,
                                                       std::string_view uri_query,
                                                       const StoreOptions& options) {
  IDEM_ASSIGN_OR_RETURN(sqlite::OpenSettings settings,
                        sqlite::ResolveOpenSettings(path, uri_query, options));
  return OpenResolved(std::move(settings), options.lock_timeout);
}

namespace sqlite {

absl::StatusOr<std::unique_ptr<Store>> OpenSqliteStoreWithHostClock(std::string_view path,
                                                                    std::string_view uri_query,
                                                                    const StoreOptions& options,
                                                                    const HostClock* host_clock) {
  IDEM_ASSIGN_OR_RETURN(OpenSettings settings, ResolveOpenSettings(path, uri_query, options));
  settings.host_clock = host_clock;
  return OpenResolved(std::move(settings), options.lock_timeout);
}

}  // namespace sqlite

}  // namespace idem
