#include "store/postgres/pg_set_batch.h"

#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "common/status_macros.h"
#include "core/retried_write.h"
#include "core/stale_fence.h"
#include "store/postgres/pg_key_table.h"
#include "store/postgres/pg_set_statements.h"

namespace idem::postgres {
namespace {

// Statements sent in one pipeline at most: the server's answers then fit in the socket buffers,
// so that it never blocks writing them while idem is still sending.
constexpr size_t kMaxPipelined = 64;

// The writes of one set-based statement, and where its answer is in the pipeline.
struct Group {
  std::vector<size_t> writes;
  size_t answer = 0;
};

class SetBatch {
 public:
  SetBatch(PgConnection& conn, int64_t now, Millis retention, BatchRules rules,
           std::span<const LeaseWrite> writes, std::span<const KeyRecord> locked)
      : conn_(conn), now_(now), retention_(retention), rules_(rules), writes_(writes) {
    for (const KeyRecord& record : locked) locked_.emplace(ScopeId(record.scope), &record);
  }

  absl::StatusOr<std::optional<std::vector<LeaseWriteResult>>> Apply(
      std::span<const size_t> order) {
    results_.assign(writes_.size(), {});
    Plan(order);
    IDEM_ASSIGN_OR_RETURN(std::vector<postgres::Result> answers, RunChunked(statements_));
    for (size_t n = 0; n < overs_.writes.size(); ++n) {
      std::optional<KeyRecord> won = FirstRecord(answers[overs_.answer + n]);
      if (!won.has_value()) return std::nullopt;  // its locked row did not match: never expected
      results_[overs_.writes[n]] = Claimed(writes_[overs_.writes[n]], *std::move(won));
    }
    if (!inserts_.writes.empty()) SettleInserts(answers[inserts_.answer]);
    for (const Group* group : {&beats_, &releases_}) {
      if (!group->writes.empty()) Settle(*group, ScopeIdsOf(answers[group->answer]));
    }
    std::vector<std::string> finished;
    for (size_t n = 0; n < finish_answers_; ++n) {
      for (std::string& id : ScopeIdsOf(answers[finishes_.answer + n])) {
        finished.push_back(std::move(id));
      }
    }
    if (!finishes_.writes.empty()) Settle(finishes_, finished);
    if (unexplained_.empty()) return std::move(results_);
    return ExplainByReading();
  }

 private:
  // Sorts the valid writes into the statements of the pipeline, in lock order.
  void Plan(std::span<const size_t> order) {
    std::vector<ClaimParams> claims;
    std::vector<Statement> overs;
    std::vector<const LeaseWrite*> beats, finishes, releases;
    for (size_t i : order) {
      const LeaseWrite& write = writes_[i];
      if (absl::Status valid = CheckWrite(write); !valid.ok()) {
        results_[i] = Result(std::move(valid));
        continue;
      }
      const KeyRecord* row = Locked(write.scope);
      switch (write.kind) {
        case LeaseWrite::Kind::kClaim: {
          ClaimParams claim = ClaimAt(write, now_, retention_);
          if (row == nullptr) {
            inserts_.writes.push_back(i);
            claims.push_back(std::move(claim));
          } else if (ClaimWritesOver(*row, claim, rules_.take_over_lapsed)) {
            overs_.writes.push_back(i);
            overs.push_back(row->expires_ms <= now_ ? ReplaceExpiredStatement(claim, row->fence)
                                                    : TakeOverLapsedStatement(claim, row->fence));
          } else {
            results_[i] = Found(write, *row);
          }
          break;
        }
        case LeaseWrite::Kind::kHeartbeat:
          beats_.writes.push_back(i);
          beats.push_back(&write);
          break;
        case LeaseWrite::Kind::kComplete:
        case LeaseWrite::Kind::kFailFinal:
          finishes_.writes.push_back(i);
          finishes.push_back(&write);
          break;
        case LeaseWrite::Kind::kRelease:
          releases_.writes.push_back(i);
          releases.push_back(&write);
          break;
      }
    }
    if (!claims.empty()) Add(inserts_, InsertClaimsStatement(claims, now_));
    if (!beats.empty()) Add(beats_, ExtendLeasesStatement(beats, now_));
    if (!releases.empty()) Add(releases_, DeleteClaimsStatement(releases, now_));
    finishes_.answer = statements_.size();
    // Outcomes in statements of at most kMaxOutcomeBytes (at least one outcome each).
    for (size_t at = 0; at < finishes.size();) {
      size_t end = at + 1;
      for (size_t bytes = OutcomeBytes(*finishes[at]); end < finishes.size(); ++end) {
        bytes += OutcomeBytes(*finishes[end]);
        if (bytes > kMaxOutcomeBytes) break;
      }
      statements_.push_back(RecordOutcomesStatement(std::span(finishes).subspan(at, end - at), now_,
                                                    now_ + retention_.count()));
      ++finish_answers_;
      at = end;
    }
    overs_.answer = statements_.size();
    for (Statement& over : overs) statements_.push_back(std::move(over));
  }

  void Add(Group& group, Statement statement) {
    group.answer = statements_.size();
    statements_.push_back(std::move(statement));
  }

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

  void SettleInserts(const postgres::Result& answer) {
    std::unordered_map<std::string, KeyRecord> won;
    for (KeyRecord& record : Records(answer)) {
      std::string id = ScopeId(record.scope);
      won.emplace(std::move(id), std::move(record));
    }
    for (size_t i : inserts_.writes) {
      auto it = won.find(ScopeId(writes_[i].scope));
      if (it == won.end()) {
        unexplained_.push_back(i);  // a concurrent claimer's row was in the way
      } else {
        results_[i] = Claimed(writes_[i], std::move(it->second));
      }
    }
  }

  // The fenced writes of `group`, `changed` naming the scopes its statements changed.
  void Settle(const Group& group, const std::vector<std::string>& changed) {
    const std::unordered_set<std::string> done(changed.begin(), changed.end());
    for (size_t i : group.writes) {
      const LeaseWrite& write = writes_[i];
      if (done.contains(ScopeId(write.scope))) {
        results_[i] = Result(absl::OkStatus());
        if (write.kind == LeaseWrite::Kind::kHeartbeat) {
          results_[i].lease_until_ms = now_ + write.lease.count();
        }
      } else if (const KeyRecord* row = Locked(write.scope); row != nullptr) {
        Explain(i, *row);  // locked since before the write: what it found
      } else {
        unexplained_.push_back(i);
      }
    }
  }

  // The writes of unexplained_, explained by the records read now. nullopt: see ApplySetBased.
  absl::StatusOr<std::optional<std::vector<LeaseWriteResult>>> ExplainByReading() {
    std::vector<const Scope*> scopes;
    for (size_t i : unexplained_) scopes.push_back(&writes_[i].scope);
    IDEM_ASSIGN_OR_RETURN(postgres::Result answer, conn_.Run(ReadRowsStatement(scopes)));
    std::unordered_map<std::string, KeyRecord> found;
    for (KeyRecord& record : Records(answer)) {
      std::string id = ScopeId(record.scope);
      found.emplace(std::move(id), std::move(record));
    }
    for (size_t i : unexplained_) {
      auto it = found.find(ScopeId(writes_[i].scope));
      if (it == found.end()) {
        if (writes_[i].kind == LeaseWrite::Kind::kClaim) return std::nullopt;  // vanished
        Explain(i, std::nullopt);
        continue;
      }
      if (writes_[i].kind == LeaseWrite::Kind::kClaim &&
          ClaimWritesOver(it->second, ClaimAt(writes_[i], now_, retention_),
                          rules_.take_over_lapsed)) {
        return std::nullopt;
      }
      Explain(i, std::move(it->second));
    }
    return std::move(results_);
  }

  // Sets the result of write `i` whose statement changed nothing from `found`, the record now (any
  // state, live or not; nullopt: none). A claim's found record is live and not to be written over.
  void Explain(size_t i, std::optional<KeyRecord> found) {
    const LeaseWrite& write = writes_[i];
    if (write.kind == LeaseWrite::Kind::kClaim) {
      results_[i] = Found(write, *std::move(found));
      return;
    }
    if (found.has_value() && found->expires_ms <= now_) found.reset();  // only a live one counts
    switch (write.kind) {
      case LeaseWrite::Kind::kHeartbeat:
        results_[i] = Result(idem::StaleFenceError("heartbeat", write.scope, write.fence, found));
        return;
      case LeaseWrite::Kind::kRelease:
        results_[i] = Result(UnchangedRelease(write, found));
        return;
      default:
        results_[i] = Result(UnchangedFinish(write, FinalState(write), found, rules_));
        return;
    }
  }

  LeaseWriteResult Claimed(const LeaseWrite& write, KeyRecord record) const {
    LeaseWriteResult result = Result(absl::OkStatus());
    result.claimed = true;
    // A lease is positive, so a lapsed lease was claimed before now: only a takeover keeps an
    // older created time.
    result.taken_over = record.created_ms != now_;
    result.lease_until_ms = now_ + write.lease.count();
    result.record = std::move(record);
    return result;
  }

  LeaseWriteResult Found(const LeaseWrite& write, const KeyRecord& record) const {
    if (IsOwnClaim(write, record)) return OwnClaimResult(record, now_);  // its own earlier attempt
    LeaseWriteResult result = Result(absl::OkStatus());
    result.record = record;
    return result;
  }

  const KeyRecord* Locked(const Scope& scope) const {
    auto it = locked_.find(ScopeId(scope));
    return it == locked_.end() ? nullptr : it->second;
  }

  LeaseWriteResult Result(absl::Status status) const {
    return {.status = std::move(status), .now_ms = now_};
  }

  PgConnection& conn_;
  const int64_t now_;
  const Millis retention_;
  const BatchRules rules_;
  const std::span<const LeaseWrite> writes_;
  std::unordered_map<std::string, const KeyRecord*> locked_;
  std::vector<LeaseWriteResult> results_;
  std::vector<Statement> statements_;
  Group inserts_, overs_, beats_, finishes_, releases_;
  size_t finish_answers_ = 0;
  std::vector<size_t> unexplained_;  // writes whose statement changed nothing, rows not locked
};

}  // namespace

absl::StatusOr<std::optional<std::vector<LeaseWriteResult>>> ApplySetBased(
    PgConnection& conn, int64_t now, Millis retention, BatchRules rules,
    std::span<const LeaseWrite> writes, std::span<const size_t> order,
    std::span<const KeyRecord> locked) {
  SetBatch batch(conn, now, retention, rules, writes, locked);
  return batch.Apply(order);
}

}  // namespace idem::postgres
