#include "store/postgres/pg_lease_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/status_macros.h"
#include "core/retried_write.h"
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
  if (write.kind < LeaseWrite::Kind::kClaim || write.kind > LeaseWrite::Kind::kRelease) {
    return absl::InvalidArgumentError("lease write kind out of range");
  }
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

// The claim `write` asks for at `now`: a lease from now, the record kept at least until the
// retention ends and at least as long as the lease.
ClaimParams ClaimAt(const LeaseWrite& write, int64_t now, Millis retention) {
  const int64_t until = now + write.lease.count();
  return {write.scope, write.fingerprint,
          write.owner, now,
          until,       std::max(now + retention.count(), until)};
}

// The status of a Complete or FailFinal (`state`) whose statement changed nothing, from the record
// read after it: OK for a retry of a write that committed (its answer was lost) when the rules
// allow it, else a stale fence.
absl::Status UnchangedFinish(const LeaseWrite& write, KeyState state,
                             const std::optional<KeyRecord>& found, const BatchRules& rules) {
  if (rules.idempotent_finish && found.has_value() && found->fence == write.fence &&
      found->state == state && found->response == write.response) {
    return absl::OkStatus();
  }
  return idem::StaleFenceError("outcome", write.scope, write.fence, found);
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

// Writes sent in one pipeline at most: the server's answers to a pipeline (a command tag or a
// record each) then fit in the socket buffers, so that the server never blocks writing them
// while idem is still sending.
constexpr size_t kMaxPipelined = 64;

// A batch's writes with their first statements pipelined: each write's statement in lock order,
// kMaxPipelined to a round trip; then, for the writes whose statement changed nothing, the read
// that explains why (a claim's record in the way, a fenced write's live record), pipelined too.
// The results equal Batch's: each write runs the same statements, and only reads move later.
// A claim that must write over the record it found (an expired record, a lapsed lease taken over,
// a record deleted since) is not finished here: that write would lock its row after rows later
// in the lock order, so the caller rolls back and applies the batch one statement at a time.
class PipelinedBatch {
 public:
  PipelinedBatch(PgConnection& conn, int64_t now, Millis retention, BatchRules rules,
                 std::span<const LeaseWrite> writes)
      : conn_(conn), now_(now), retention_(retention), rules_(rules), writes_(writes) {}

  // The results in the caller's order; nullopt when the batch must be applied one statement at a
  // time (above). Errors: a failed statement's (the batch must be rolled back).
  absl::StatusOr<std::optional<std::vector<LeaseWriteResult>>> Apply(
      std::span<const size_t> order) {
    std::vector<LeaseWriteResult> results(writes_.size());
    std::vector<size_t> sent;  // the writes whose statement went out, in lock order
    std::vector<Statement> statements;
    for (size_t i : order) {
      if (absl::Status valid = CheckWrite(writes_[i]); !valid.ok()) {
        results[i] = Result(valid);
        continue;
      }
      sent.push_back(i);
      statements.push_back(FirstStatement(writes_[i]));
    }
    IDEM_ASSIGN_OR_RETURN(std::vector<postgres::Result> answers, RunChunked(statements));
    std::vector<size_t> unexplained;  // writes whose statement changed nothing, in lock order
    statements.clear();
    for (size_t n = 0; n < sent.size(); ++n) {
      const size_t i = sent[n];
      if (FirstDone(writes_[i], answers[n], results[i])) continue;
      unexplained.push_back(i);
      statements.push_back(writes_[i].kind == LeaseWrite::Kind::kClaim
                               ? SelectAnyStatement(writes_[i].scope)
                               : SelectLiveStatement(writes_[i].scope, now_));
    }
    IDEM_ASSIGN_OR_RETURN(answers, RunChunked(statements));
    for (size_t n = 0; n < unexplained.size(); ++n) {
      const size_t i = unexplained[n];
      if (!Explain(writes_[i], FirstRecord(answers[n]), results[i])) return std::nullopt;
    }
    return results;
  }

 private:
  absl::StatusOr<std::vector<postgres::Result>> RunChunked(std::span<const Statement> statements) {
    std::vector<postgres::Result> answers;
    answers.reserve(statements.size());
    for (size_t at = 0; at < statements.size(); at += kMaxPipelined) {
      IDEM_ASSIGN_OR_RETURN(
          std::vector<postgres::Result> chunk,
          conn_.RunAll(statements.subspan(at, std::min(kMaxPipelined, statements.size() - at))));
      for (postgres::Result& answer : chunk) answers.push_back(std::move(answer));
    }
    return answers;
  }

  ClaimParams Claim(const LeaseWrite& write) const { return ClaimAt(write, now_, retention_); }

  Statement FirstStatement(const LeaseWrite& write) const {
    switch (write.kind) {
      case LeaseWrite::Kind::kClaim:
        return InsertClaimStatement(Claim(write));
      case LeaseWrite::Kind::kHeartbeat:
        return ExtendLeaseStatement(write.scope, write.fence, now_, now_ + write.lease.count());
      case LeaseWrite::Kind::kComplete:
      case LeaseWrite::Kind::kFailFinal:
        return RecordOutcomeStatement(write.scope, write.fence, FinalState(write), write.response,
                                      now_, now_ + retention_.count());
      case LeaseWrite::Kind::kRelease:
        return DeleteClaimStatement(write.scope, write.fence, now_);
    }
    return {};  // unreachable: CheckWrite let only the kinds above through
  }

  static KeyState FinalState(const LeaseWrite& write) {
    return write.kind == LeaseWrite::Kind::kComplete ? KeyState::kCompleted
                                                     : KeyState::kFailedFinal;
  }

  // Sets `result` and returns true when the first statement's `answer` settles the write.
  bool FirstDone(const LeaseWrite& write, const postgres::Result& answer,
                 LeaseWriteResult& result) const {
    if (write.kind == LeaseWrite::Kind::kClaim) {
      std::optional<KeyRecord> won = FirstRecord(answer);
      if (!won.has_value()) return false;
      result = Result(absl::OkStatus());
      result.claimed = true;
      result.taken_over = won->created_ms != now_;  // as Batch::Claim
      result.lease_until_ms = now_ + write.lease.count();
      result.record = *std::move(won);
      return true;
    }
    if (RowsChanged(answer) != 1) return false;
    result = Result(absl::OkStatus());
    if (write.kind == LeaseWrite::Kind::kHeartbeat) {
      result.lease_until_ms = now_ + write.lease.count();
    }
    return true;
  }

  // Sets `result` from `found`, the read after a first statement that changed nothing; false
  // when a claim must write over `found` (or insert again, when nothing was found).
  bool Explain(const LeaseWrite& write, std::optional<KeyRecord> found,
               LeaseWriteResult& result) const {
    switch (write.kind) {
      case LeaseWrite::Kind::kClaim:
        if (!found.has_value() || ClaimWritesOver(*found, Claim(write), rules_.take_over_lapsed)) {
          return false;
        }
        if (IsOwnClaim(write, *found)) {
          result = OwnClaimResult(*found, now_);  // a retry of a claim that committed
          return true;
        }
        result = Result(absl::OkStatus());
        result.record = *std::move(found);
        return true;
      case LeaseWrite::Kind::kHeartbeat:
        result = Result(idem::StaleFenceError("heartbeat", write.scope, write.fence, found));
        return true;
      case LeaseWrite::Kind::kRelease:
        result = Result(UnchangedRelease(write, found));
        return true;
      case LeaseWrite::Kind::kComplete:
      case LeaseWrite::Kind::kFailFinal:
        result = Result(UnchangedFinish(write, FinalState(write), found, rules_));
        return true;
    }
    return true;
  }

  LeaseWriteResult Result(absl::Status status) const {
    return {.status = std::move(status), .now_ms = now_};
  }

  PgConnection& conn_;
  const int64_t now_;
  const Millis retention_;
  const BatchRules rules_;
  const std::span<const LeaseWrite> writes_;
};

// true when a scope appears twice in `order` (sorted by scope): a read explaining one of its
// writes would then see the effect of the other, so such a batch runs one statement at a time.
bool RepeatsAScope(std::span<const LeaseWrite> writes, std::span<const size_t> order) {
  for (size_t n = 1; n < order.size(); ++n) {
    const Scope& x = writes[order[n - 1]].scope;
    const Scope& y = writes[order[n]].scope;
    if (x.tenant == y.tenant && x.key == y.key) return true;
  }
  return false;
}

// The writes one statement at a time, in lock order, at `now`.
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

// The writes of a batch inside its transaction (BEGIN deferred by the caller).
absl::StatusOr<std::vector<LeaseWriteResult>> ApplyInTransaction(PgConnection& conn,
                                                                 const Clock* clock,
                                                                 Millis retention,
                                                                 std::span<const LeaseWrite> writes,
                                                                 BatchRules rules) {
  IDEM_ASSIGN_OR_RETURN(const int64_t now, StoreNow(conn, clock));
  const std::vector<size_t> order = LockOrder(writes);
  if (RepeatsAScope(writes, order)) {
    return ApplyInTurn(conn, now, retention, writes, order, rules);
  }
  PipelinedBatch pipelined(conn, now, retention, rules, writes);
  IDEM_ASSIGN_OR_RETURN(std::optional<std::vector<LeaseWriteResult>> results,
                        pipelined.Apply(order));
  if (results.has_value()) return *std::move(results);
  // A claim must write over a record: start again, one statement at a time, so that every row
  // is locked in lock order. The fences drawn meanwhile are skipped, never handed out twice.
  IDEM_RETURN_IF_ERROR(conn.Run("ROLLBACK", {}, "rollback of a pipelined lease batch").status());
  conn.Defer("BEGIN");
  return ApplyInTurn(conn, now, retention, writes, order, rules);
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
  if (writes.size() == 1) {
    IDEM_ASSIGN_OR_RETURN(const int64_t now, StoreNow(conn, clock));
    const size_t only = 0;
    return ApplyInTurn(conn, now, retention, writes, {&only, 1}, rules);
  }
  conn.Defer("BEGIN");  // goes out with the batch's first statement, in one round trip
  absl::StatusOr<std::vector<LeaseWriteResult>> results =
      ApplyInTransaction(conn, clock, retention, writes, rules);
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
