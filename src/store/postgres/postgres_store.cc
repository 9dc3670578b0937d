// The shared store on PostgreSQL: lease mode on pooled connections in autocommit, transaction
// mode on PostgresTransaction. Open() checks the URI, connects and migrates.
#include "idem/postgres_store.h"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "common/status_macros.h"
#include "core/key_query.h"
#include "core/lease_length.h"
#include "core/stale_fence.h"
#include "idem/key.h"
#include "store/postgres/pg_key_table.h"
#include "store/postgres/pg_lease_batch.h"
#include "store/postgres/pg_pool.h"
#include "store/postgres/pg_schema.h"
#include "store/postgres/pg_uri.h"
#include "store/postgres/postgres_transaction.h"

namespace idem {
namespace postgres {
namespace {

absl::Status CheckRequest(const ClaimRequest& request) {
  IDEM_RETURN_IF_ERROR(ValidateScope(request.scope));
  return CheckLeaseLength(request.lease);
}

class PostgresStore final : public Store {
 public:
  PostgresStore(std::shared_ptr<ConnectionPool> pool, const StoreOptions& options)
      : pool_(std::move(pool)),
        options_(options),
        clock_(options.clock != nullptr ? *options.clock : SystemClock()) {}

  absl::StatusOr<ClaimResult> Claim(const ClaimRequest& request) override {
    IDEM_ASSIGN_OR_RETURN(LeaseWriteResult result, One({.kind = LeaseWrite::Kind::kClaim,
                                                        .scope = request.scope,
                                                        .fingerprint = request.fingerprint,
                                                        .owner = request.owner,
                                                        .lease = request.lease}));
    IDEM_RETURN_IF_ERROR(result.status);
    return ClaimResult{result.claimed, std::move(result.record)};
  }

  absl::StatusOr<KeyRecord> TakeOver(const ClaimRequest& request, int64_t expected_fence) override {
    IDEM_RETURN_IF_ERROR(CheckRequest(request));
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    IDEM_ASSIGN_OR_RETURN(const int64_t now, StoreNow(*conn, options_.clock));
    const ClaimParams p = Params(request, now);
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> won, TakeOverLapsed(*conn, p, expected_fence));
    if (won.has_value()) return *std::move(won);
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(*conn, p.scope, p.now_ms));
    if (!live.has_value()) {
      return absl::NotFoundError(fmt::format(
          "takeover of key '{}' (tenant '{}'): there is no live record to take over; claim it",
          p.scope.key, p.scope.tenant));
    }
    if (live->fingerprint != p.fingerprint) return TakeOverMismatchError(p.scope);
    return absl::AbortedError(fmt::format(
        "takeover of key '{}' (tenant '{}') expecting fence {}: the record has fence {}, owner "
        "'{}', lease until {} (now {}); someone else holds or finished it",
        p.scope.key, p.scope.tenant, expected_fence, live->fence, live->owner, live->lease_until_ms,
        p.now_ms));
  }

  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    if (writes.empty()) return std::vector<LeaseWriteResult>();
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    return postgres::ApplyLeaseBatch(*conn, options_.clock, options_.retention, writes);
  }

  absl::Status Heartbeat(const Scope& scope, int64_t fence, Millis lease) override {
    IDEM_ASSIGN_OR_RETURN(LeaseWriteResult result, One({.kind = LeaseWrite::Kind::kHeartbeat,
                                                        .scope = scope,
                                                        .lease = lease,
                                                        .fence = fence}));
    return result.status;
  }

  absl::Status Complete(const Scope& scope, int64_t fence,
                        const StoredResponse& response) override {
    return Record(scope, fence, KeyState::kCompleted, response);
  }

  absl::Status FailFinal(const Scope& scope, int64_t fence,
                         const StoredResponse& response) override {
    return Record(scope, fence, KeyState::kFailedFinal, response);
  }

  absl::Status Release(const Scope& scope, int64_t fence) override {
    IDEM_ASSIGN_OR_RETURN(
        LeaseWriteResult result,
        One({.kind = LeaseWrite::Kind::kRelease, .scope = scope, .fence = fence}));
    return result.status;
  }

  absl::StatusOr<KeyRecord> Get(const Scope& scope) override {
    IDEM_RETURN_IF_ERROR(ValidateScope(scope));
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live,
                          SelectLive(*conn, scope, clock_.NowMillis()));
    if (live.has_value()) return *std::move(live);
    return absl::NotFoundError(
        fmt::format("key '{}' of tenant '{}' has no live record", scope.key, scope.tenant));
  }

  absl::StatusOr<int64_t> SweepExpired(int64_t max_rows) override {
    if (max_rows <= 0) {
      return absl::InvalidArgumentError(
          fmt::format("SweepExpired needs max_rows >= 1, got {}", max_rows));
    }
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    IDEM_ASSIGN_OR_RETURN(const int64_t now, StoreNow(*conn, options_.clock));
    return DeleteExpired(*conn, now, max_rows);
  }

  absl::StatusOr<std::vector<KeyRecord>> List(const KeyQuery& query) override {
    IDEM_RETURN_IF_ERROR(ValidateKeyQuery(query));
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    IDEM_ASSIGN_OR_RETURN(const int64_t now, StoreNow(*conn, options_.clock));
    return SelectMany(*conn, query, now);
  }

  absl::Status Purge(const Scope& scope) override {
    IDEM_RETURN_IF_ERROR(ValidateScope(scope));
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    IDEM_ASSIGN_OR_RETURN(int64_t deleted, DeleteAny(*conn, scope));
    if (deleted == 0) {
      return absl::NotFoundError(
          fmt::format("key '{}' of tenant '{}' has no record", scope.key, scope.tenant));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<StoreTransaction>> Begin() override {
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    return std::make_unique<PostgresTransaction>(std::move(conn), options_, clock_);
  }

 private:
  // A single lease-mode call: a batch of one (in autocommit) with the single calls' rules.
  absl::StatusOr<LeaseWriteResult> One(const LeaseWrite& write) {
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool_->Acquire());
    IDEM_ASSIGN_OR_RETURN(
        std::vector<LeaseWriteResult> results,
        postgres::ApplyLeaseBatch(*conn, options_.clock, options_.retention, {&write, 1},
                                  {.take_over_lapsed = false, .idempotent_finish = false}));
    return std::move(results[0]);
  }

  ClaimParams Params(const ClaimRequest& request, int64_t now) const {
    const int64_t lease_until = now + request.lease.count();
    return ClaimParams{request.scope, request.fingerprint,
                       request.owner, now,
                       lease_until,   std::max(now + options_.retention.count(), lease_until)};
  }

  absl::Status Record(const Scope& scope, int64_t fence, KeyState state,
                      const StoredResponse& response) {
    IDEM_ASSIGN_OR_RETURN(LeaseWriteResult result,
                          One({.kind = state == KeyState::kCompleted ? LeaseWrite::Kind::kComplete
                                                                     : LeaseWrite::Kind::kFailFinal,
                               .scope = scope,
                               .fence = fence,
                               .response = response}));
    return result.status;
  }

  std::shared_ptr<ConnectionPool> pool_;
  StoreOptions options_;
  Clock& clock_;
};

absl::Status CheckOptions(const StoreOptions& options) {
  if (options.max_connections < 1) {
    return absl::InvalidArgumentError(
        fmt::format("StoreOptions::max_connections is {}: the PostgreSQL store needs at least 1",
                    options.max_connections));
  }
  if (options.lock_timeout.count() < 1 || options.statement_timeout.count() < 0 ||
      options.retention.count() < 1) {
    return absl::InvalidArgumentError(
        "StoreOptions: lock_timeout and retention must be positive, statement_timeout not "
        "negative");
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace postgres

absl::StatusOr<std::unique_ptr<Store>> OpenPostgresStore(std::string_view conninfo,
                                                         const StoreOptions& options) {
  using namespace postgres;
  IDEM_RETURN_IF_ERROR(CheckOptions(options));
  IDEM_ASSIGN_OR_RETURN(ParsedConninfo parsed, ParseConninfo(conninfo));
  // Per session as well as per transaction (SET LOCAL), so that lease-mode statements, which
  // run in autocommit, wait no longer either; a session idle inside a transaction for longer
  // than statement_timeout is ended by the server, so a stuck effect cannot hold a key forever.
  const std::string session = fmt::format(
      "SET statement_timeout = {0}; SET lock_timeout = {1}; "
      "SET idle_in_transaction_session_timeout = {0}",
      options.statement_timeout.count(), options.lock_timeout.count());
  auto pool = std::make_shared<ConnectionPool>(std::string(conninfo), parsed.target, session,
                                               options.max_connections, options.lock_timeout);
  {
    IDEM_ASSIGN_OR_RETURN(PooledConnection conn, pool->Acquire());
    Clock& clock = options.clock != nullptr ? *options.clock : SystemClock();
    IDEM_RETURN_IF_ERROR(
        Migrate(*conn, KnownMigrations(), clock.NowMillis(), options.lock_timeout));
  }
  return std::make_unique<PostgresStore>(std::move(pool), options);
}

}  // namespace idem
