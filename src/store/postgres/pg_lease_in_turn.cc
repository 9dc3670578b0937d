#include "store/postgres/pg_lease_in_turn.h"

#include <optional>
#include <string_view>
#include <utility>

#include "common/status_macros.h"
#include "core/retried_write.h"
#include "store/postgres/pg_key_table.h"

namespace idem::postgres {
namespace {

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
      case LeaseWrite::Kind::kFailFinal:
        return Finish(write, FinalState(write));
      case LeaseWrite::Kind::kRelease: {
        IDEM_ASSIGN_OR_RETURN(int64_t changed, DeleteClaim(conn_, write.scope, write.fence, now_));
        if (changed == 1) return Result(absl::OkStatus());
        IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn_, write.scope, now_));
        return Result(UnchangedRelease(write, live));
      }
    }
    return Result(absl::InvalidArgumentError("lease write kind out of range"));  // CheckWrite's
  }

 private:
  absl::StatusOr<LeaseWriteResult> Claim(const LeaseWrite& write) {
    const ClaimParams params = ClaimAt(write, now_, retention_);
    IDEM_ASSIGN_OR_RETURN(ClaimResult claim, ClaimKey(conn_, params, rules_.take_over_lapsed));
    if (!claim.claimed && IsOwnClaim(write, claim.record)) {
      return OwnClaimResult(claim.record, now_);  // a retry of a claim that committed
    }
    LeaseWriteResult result = Result(absl::OkStatus());
    result.claimed = claim.claimed;
    if (claim.claimed) {
      // A lease is positive, so a lapsed lease was claimed before now: only a takeover keeps
      // an older created time.
      result.taken_over = claim.record.created_ms != now_;
      result.lease_until_ms = params.lease_until_ms;
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
    return Result(UnchangedFinish(write, state, live, rules_));
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

}  // namespace

absl::StatusOr<std::vector<LeaseWriteResult>> ApplyInTurn(PgConnection& conn, int64_t now,
                                                          Millis retention,
                                                          std::span<const LeaseWrite> writes,
                                                          std::span<const size_t> order,
                                                          BatchRules rules) {
  Batch batch(conn, now, retention, rules);
  std::vector<LeaseWriteResult> results(writes.size());
  for (size_t i : order) {
    IDEM_ASSIGN_OR_RETURN(results[i], batch.Apply(writes[i]));
  }
  return results;
}

}  // namespace idem::postgres
