#include "store/postgres/pg_lease_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "common/status_macros.h"
#include "core/stale_fence.h"
#include "core/utf8.h"
#include "idem/key.h"
#include "store/postgres/pg_key_table.h"

namespace idem::postgres {
namespace {

absl::Status CheckLease(Millis lease) {
  if (lease.count() > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("a lease must be positive, got {} ms", lease.count()));
}

// PostgreSQL text holds neither NUL nor invalid UTF-8; a statement sent with either would fail
// and take the whole transaction with it, so such a write is refused before it is sent.
absl::Status CheckText(std::string_view name, std::string_view text) {
  if (text.find('\0') == std::string_view::npos &&
      core::FindInvalidUtf8(text) == std::string_view::npos) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      fmt::format("the {} holds a NUL byte or invalid UTF-8; give printable UTF-8 text", name));
}

absl::Status CheckWrite(const LeaseWrite& write) {
  IDEM_RETURN_IF_ERROR(ValidateScope(write.scope));
  if (write.kind == LeaseWrite::Kind::kClaim) {
    IDEM_RETURN_IF_ERROR(CheckText("fingerprint", write.fingerprint));
    IDEM_RETURN_IF_ERROR(CheckText("owner", write.owner));
  }
  if (write.kind == LeaseWrite::Kind::kClaim || write.kind == LeaseWrite::Kind::kHeartbeat) {
    return CheckLease(write.lease);
  }
  return absl::OkStatus();
}

class Batch {
 public:
  Batch(PgConnection& conn, int64_t now, Millis retention, BatchRules rules)
      : conn_(conn), now_(now), retention_(retention), rules_(rules) {}

  // The write's result, or the error that fails the whole batch (a failed statement).
  absl::StatusOr<LeaseWriteResult> Apply(const LeaseWrite& write) {
    if (absl::Status valid = CheckWrite(write); !valid.ok()) return Result(valid);
    switch (write.kind) {
      case LeaseWrite::Kind::kClaim:
        return Claim(write);
      case LeaseWrite::Kind::kHeartbeat: {
        const int64_t until = now_ + write.lease.count();
        IDEM_ASSIGN_OR_RETURN(int64_t changed,
                              ExtendLease(conn_, write.scope, write.fence, now_, until));
        if (changed != 1) return Stale(write, "heartbeat");
        LeaseWriteResult result = Result(absl::OkStatus());
        result.lease_until_ms = until;
        return result;
      }
      case LeaseWrite::Kind::kComplete:
        return Finish(write, KeyState::kCompleted);
      case LeaseWrite::Kind::kFailFinal:
        return Finish(write, KeyState::kFailedFinal);
      case LeaseWrite::Kind::kRelease: {
        IDEM_ASSIGN_OR_RETURN(int64_t changed, DeleteClaim(conn_, write.scope, write.fence, now_));
        if (changed != 1) return Stale(write, "release");
        return Result(absl::OkStatus());
      }
    }
    return Result(absl::InvalidArgumentError("lease write kind out of range"));
  }

 private:
  absl::StatusOr<LeaseWriteResult> Claim(const LeaseWrite& write) {
    const int64_t until = now_ + write.lease.count();
    const ClaimParams params{write.scope, write.fingerprint,
                             write.owner, now_,
                             until,       std::max(now_ + retention_.count(), until)};
    IDEM_ASSIGN_OR_RETURN(ClaimResult claim, ClaimKey(conn_, params, rules_.take_over_lapsed));
    LeaseWriteResult result = Result(absl::OkStatus());
    result.claimed = claim.claimed;
    if (claim.claimed) {
      // A lease is positive, so a lapsed lease was claimed before now: only a takeover keeps
      // an older created time.
      result.taken_over = claim.record.created_ms != now_;
      result.lease_until_ms = until;
    }
    result.record = std::move(claim.record);
    return result;
  }

  absl::StatusOr<LeaseWriteResult> Finish(const LeaseWrite& write, KeyState state) {
    IDEM_ASSIGN_OR_RETURN(
        int64_t changed, RecordOutcome(conn_, write.scope, write.fence, state, write.response, now_,
                                       now_ + retention_.count()));
    if (changed == 1) return Result(absl::OkStatus());
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn_, write.scope, now_));
    // A retry of a write that committed (its answer was lost): the record holds this outcome.
    if (rules_.idempotent_finish && live.has_value() && live->fence == write.fence &&
        live->state == state && live->response == write.response) {
      return Result(absl::OkStatus());
    }
    return Result(idem::StaleFenceError("outcome", write.scope, write.fence, live));
  }

  absl::StatusOr<LeaseWriteResult> Stale(const LeaseWrite& write, std::string_view operation) {
    return Result(StaleFenceError(conn_, write.scope, write.fence, now_, operation));
  }

  LeaseWriteResult Result(absl::Status status) const {
    return {.status = std::move(status), .now_ms = now_};
  }

  PgConnection& conn_;
  const int64_t now_;
  const Millis retention_;
  const BatchRules rules_;
};

// The writes' indexes in lock order: by (tenant, key), each scope's writes in the given order.
std::vector<size_t> LockOrder(std::span<const LeaseWrite> writes) {
  std::vector<size_t> order(writes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Scope& x = writes[a].scope;
    const Scope& y = writes[b].scope;
    return std::tie(x.tenant, x.key) < std::tie(y.tenant, y.key);
  });
  return order;
}

absl::StatusOr<std::vector<LeaseWriteResult>> ApplyAll(PgConnection& conn, const Clock* clock,
                                                       Millis retention,
                                                       std::span<const LeaseWrite> writes,
                                                       BatchRules rules) {
  IDEM_ASSIGN_OR_RETURN(const int64_t now, StoreNow(conn, clock));
  Batch batch(conn, now, retention, rules);
  std::vector<LeaseWriteResult> results(writes.size());
  for (size_t i : LockOrder(writes)) {
    IDEM_ASSIGN_OR_RETURN(results[i], batch.Apply(writes[i]));
  }
  return results;
}

}  // namespace

absl::StatusOr<int64_t> StoreNow(PgConnection& conn, const Clock* clock) {
  if (clock != nullptr) return clock->NowMillis();
  IDEM_ASSIGN_OR_RETURN(
      Result result, conn.Run("SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
                              {}, "reading the database's clock"));
  if (PQntuples(result.get()) != 1) {
    return absl::InternalError("reading the database's clock returned no row");
  }
  return std::strtoll(PQgetvalue(result.get(), 0, 0), nullptr, 10);
}

absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(PgConnection& conn,
                                                              const Clock* clock, Millis retention,
                                                              std::span<const LeaseWrite> writes,
                                                              BatchRules rules) {
  if (writes.empty()) return std::vector<LeaseWriteResult>();
  // One write needs no transaction of its own: each of its statements commits alone, as the
  // single calls always did.
  if (writes.size() == 1) return ApplyAll(conn, clock, retention, writes, rules);
  conn.Defer("BEGIN");  // goes out with the batch's first statement, in one round trip
  absl::StatusOr<std::vector<LeaseWriteResult>> results =
      ApplyAll(conn, clock, retention, writes, rules);
  if (!results.ok()) {
    conn.DropDeferred();
    if (!conn.broken() && !conn.Run("ROLLBACK", {}, "rollback of a lease batch").ok()) {
      conn.MarkBroken();
    }
    return results.status();
  }
  absl::StatusOr<Result> commit = conn.Run("COMMIT", {}, "commit of a lease batch");
  if (!commit.ok()) {
    const bool unknown = conn.lost();
    conn.MarkBroken();
    return absl::UnavailableError(fmt::format(
        "the lease batch's commit failed: {}; {}", std::string(commit.status().message()),
        unknown ? "its outcome is unknown (the connection was lost): look the keys up"
                : "nothing of it was committed"));
  }
  return results;
}

}  // namespace idem::postgres
