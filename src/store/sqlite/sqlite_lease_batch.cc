#include "store/sqlite/sqlite_lease_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "common/status_macros.h"
#include "core/lease_length.h"
#include "core/retried_write.h"
#include "core/stale_fence.h"
#include "idem/key.h"
#include "store/sqlite/key_table.h"

namespace idem::sqlite {
namespace {

// One batch under the write lock: the time it runs at and the fences it hands out.
class Batch {
 public:
  Batch(Connection& conn, int64_t now, HostTime host, Millis retention)
      : conn_(conn), now_(now), host_(host), retention_(retention) {}

  // The result of `write`, or the error that fails the whole batch (a failed statement).
  absl::StatusOr<LeaseWriteResult> Apply(const LeaseWrite& write);
  // Records the fences the batch handed out in the counter.
  absl::Status RecordFences() {
    if (!next_fence_.has_value() || *next_fence_ == first_fence_) return absl::OkStatus();
    return UseFence(conn_, *next_fence_ - 1);
  }

 private:
  absl::StatusOr<LeaseWriteResult> Claim(const LeaseWrite& write);
  absl::StatusOr<LeaseWriteResult> Heartbeat(const LeaseWrite& write);
  absl::StatusOr<LeaseWriteResult> Finish(const LeaseWrite& write, KeyState state);
  absl::StatusOr<LeaseWriteResult> Release(const LeaseWrite& write);
  absl::StatusOr<LeaseWriteResult> Stale(const LeaseWrite& write, std::string_view operation) {
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn_, write.scope, now_));
    return Result(StaleFenceError(operation, write.scope, write.fence, live));
  }
  LeaseWriteResult Result(absl::Status status) const {
    return {.status = std::move(status), .now_ms = now_};
  }

  Connection& conn_;
  const int64_t now_;
  const HostTime host_;  // the host clock at now_, which leases run on
  const Millis retention_;
  std::optional<int64_t> next_fence_;  // read from the counter at the batch's first claim
  int64_t first_fence_ = 0;
};

absl::StatusOr<LeaseWriteResult> Batch::Apply(const LeaseWrite& write) {
  if (absl::Status valid = ValidateScope(write.scope); !valid.ok()) return Result(valid);
  switch (write.kind) {
    case LeaseWrite::Kind::kClaim:
      return Claim(write);
    case LeaseWrite::Kind::kHeartbeat:
      return Heartbeat(write);
    case LeaseWrite::Kind::kComplete:
      return Finish(write, KeyState::kCompleted);
    case LeaseWrite::Kind::kFailFinal:
      return Finish(write, KeyState::kFailedFinal);
    case LeaseWrite::Kind::kRelease:
      return Release(write);
  }
  return Result(absl::InvalidArgumentError("lease write kind out of range"));
}

absl::StatusOr<LeaseWriteResult> Batch::Claim(const LeaseWrite& write) {
  if (absl::Status lease = CheckLeaseLength(write.lease); !lease.ok()) return Result(lease);
  if (!next_fence_.has_value()) {
    IDEM_ASSIGN_OR_RETURN(first_fence_, NextFence(conn_));
    next_fence_ = first_fence_;
  }
  const int64_t lease_until = now_ + write.lease.count();
  const ClaimParams params{.scope = write.scope,
                           .fingerprint = write.fingerprint,
                           .owner = write.owner,
                           .now_ms = now_,
                           .lease_until_ms = lease_until,
                           .expires_ms = std::max(now_ + retention_.count(), lease_until),
                           .host = host_,
                           .note = &write.response,
                           .claim_nonce = write.claim_nonce};
  IDEM_ASSIGN_OR_RETURN(std::optional<UpsertedClaim> won, UpsertClaim(conn_, params, *next_fence_));
  LeaseWriteResult result = Result(absl::OkStatus());
  if (won.has_value()) {
    // A replaced record's fence may have been above the one offered (key_table.h).
    next_fence_ = std::max(*next_fence_, won->record.fence) + 1;
    result.claimed = true;
    result.taken_over = won->taken_over;
    result.record = std::move(won->record);
    result.lease_until_ms = lease_until;
    return result;
  }
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn_, write.scope, now_));
  if (!live.has_value()) {
    return absl::InternalError(fmt::format(
        "key '{}' of tenant '{}' was neither claimable nor present under the write lock",
        write.scope.key, write.scope.tenant));
  }
  // A retry of a claim that committed (its answer was lost): the caller holds the key.
  if (IsOwnClaim(write, *live)) return OwnClaimResult(*live, now_);
  result.record = *std::move(live);
  return result;
}

absl::StatusOr<LeaseWriteResult> Batch::Heartbeat(const LeaseWrite& write) {
  if (absl::Status lease = CheckLeaseLength(write.lease); !lease.ok()) return Result(lease);
  const int64_t lease_until = now_ + write.lease.count();
  IDEM_ASSIGN_OR_RETURN(int64_t changed,
                        ExtendLease(conn_, write.scope, write.fence, now_, lease_until, host_));
  if (changed != 1) return Stale(write, "heartbeat");
  LeaseWriteResult result = Result(absl::OkStatus());
  result.lease_until_ms = lease_until;
  return result;
}

absl::StatusOr<LeaseWriteResult> Batch::Finish(const LeaseWrite& write, KeyState state) {
  IDEM_ASSIGN_OR_RETURN(int64_t changed,
                        RecordOutcome(conn_, write.scope, write.fence, state, write.response, now_,
                                      now_ + retention_.count()));
  if (changed == 1) return Result(absl::OkStatus());
  // A retry of a write that committed (its answer was lost): the record holds this outcome.
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn_, write.scope, now_));
  if (live.has_value() && live->fence == write.fence && live->state == state &&
      live->response == write.response) {
    return Result(absl::OkStatus());
  }
  return Result(StaleFenceError("recording the outcome", write.scope, write.fence, live));
}

absl::StatusOr<LeaseWriteResult> Batch::Release(const LeaseWrite& write) {
  IDEM_ASSIGN_OR_RETURN(int64_t changed, DeleteClaim(conn_, write.scope, write.fence, now_));
  if (changed == 1) return Result(absl::OkStatus());
  // A retry of a release that committed finds the key absent: released, as asked.
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn_, write.scope, now_));
  return Result(UnchangedRelease(write, live));
}

absl::StatusOr<std::vector<LeaseWriteResult>> ApplyAll(Connection& conn, const Clock& clock,
                                                       const HostClock* host_clock,
                                                       Millis retention,
                                                       std::span<const LeaseWrite> writes) {
  // Read the time under the write lock: the wait for it may have been long.
  Batch batch(conn, clock.NowMillis(), host_clock != nullptr ? host_clock->Now() : HostTime{},
              retention);
  std::vector<LeaseWriteResult> results;
  results.reserve(writes.size());
  for (const LeaseWrite& write : writes) {
    IDEM_ASSIGN_OR_RETURN(LeaseWriteResult result, batch.Apply(write));
    results.push_back(std::move(result));
  }
  IDEM_RETURN_IF_ERROR(batch.RecordFences());
  return results;
}

}  // namespace

absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(Connection& conn, const Clock& clock,
                                                              const HostClock* host_clock,
                                                              Millis retention,
                                                              std::span<const LeaseWrite> writes) {
  if (writes.empty()) return std::vector<LeaseWriteResult>();
  IDEM_RETURN_IF_ERROR(conn.Run("BEGIN IMMEDIATE"));
  absl::StatusOr<std::vector<LeaseWriteResult>> results =
      ApplyAll(conn, clock, host_clock, retention, writes);
  absl::Status status = results.status();
  if (status.ok()) {
    status = conn.Run("COMMIT");
    if (!status.ok()) {
      status = absl::UnavailableError(
          fmt::format("the batch's commit failed, nothing of it was committed: {}",
                      std::string(status.message())));
    }
  }
  if (!status.ok()) {
    if (conn.InTransaction()) conn.Run("ROLLBACK").IgnoreError();
    return status;
  }
  return results;
}

}  // namespace idem::sqlite
