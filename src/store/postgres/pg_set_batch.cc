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

// The writes of one kind, and where the answers of their statements are in the pipeline.
struct Group {
  std::vector<size_t> writes;
  std::vector<const LeaseWrite*> pointers;
  size_t answer = 0;
  size_t answers = 0;
};

std::unordered_map<std::string, KeyRecord> ById(std::vector<KeyRecord> records) {
  std::unordered_map<std::string, KeyRecord> by_id;
  for (KeyRecord& record : records) {
    std::string id = ScopeId(record.scope);
    by_id.emplace(std::move(id), std::move(record));
  }
  return by_id;
}

class SetBatch {
 public:
  SetBatch(PgConnection& conn, const Clock* clock, Millis retention, BatchRules rules,
           std::span<const LeaseWrite> writes)
      : conn_(conn), retention_(retention), rules_(rules), writes_(writes) {
    if (clock != nullptr) clock_now_ = clock->NowMillis();
  }

  absl::StatusOr<SetBatchOutcome> Apply(std::span<const size_t> order,
                                        std::span<const Scope* const> scopes) {
    Plan(order, scopes);
    IDEM_ASSIGN_OR_RETURN(std::vector<postgres::Result> answers, RunChunked(statements_));
    IDEM_ASSIGN_OR_RETURN(now_, ReadNow(answers[0]));
    conn_.set_key_table_bytes(ReadKeyTableBytes(answers[0]));
    results_.assign(writes_.size(), Result(absl::OkStatus()));
    for (auto& [i, status] : invalid_) results_[i] = Result(std::move(status));
    if (!scopes.empty()) locked_ = ById(Records(answers[1]));
    if (!claims_.writes.empty()) SettleClaims(answers[claims_.answer]);
    for (Group* group : {&beats_, &releases_, &finishes_}) {
      std::vector<std::string> changed;
      for (size_t n = 0; n < group->answers; ++n) {
        for (std::string& id : ScopeIdsOf(answers[group->answer + n])) {
          changed.push_back(std::move(id));
        }
      }
      Settle(*group, changed);
    }
    SetBatchOutcome outcome{.now_ms = now_};
    if (overs_.empty() && unexplained_.empty()) {
      outcome.results = std::move(results_);
      return outcome;
    }
    IDEM_ASSIGN_OR_RETURN(outcome.results, Finish());
    return outcome;
  }

 private:
  // The pipeline: the clock (with the planning settings), the locking, the claims, custom plans
  // from there on, then one statement per kind of fenced write, in lock order. On a large table
  // the fenced writes run from one plan per connection, and Finish sets the custom plans.
  void Plan(std::span<const size_t> order, std::span<const Scope* const> scopes) {
    for (size_t i : order) {
      const LeaseWrite& write = writes_[i];
      if (absl::Status valid = CheckWrite(write); !valid.ok()) {
        invalid_.emplace_back(i, std::move(valid));
        continue;
      }
      Group& group = write.kind == LeaseWrite::Kind::kClaim       ? claims_
                     : write.kind == LeaseWrite::Kind::kHeartbeat ? beats_
                     : write.kind == LeaseWrite::Kind::kRelease   ? releases_
                                                                  : finishes_;
      group.writes.push_back(i);
      group.pointers.push_back(&write);
    }
    statements_.push_back(NowStatement(clock_now_));
    if (!scopes.empty()) statements_.push_back(LockRowsStatement(scopes));
    if (!claims_.writes.empty()) {
      Add(claims_, InsertClaimsStatement(claims_.pointers, clock_now_, retention_));
    }
    // Everything after the locking, the claims and (on a large table) the fenced writes, here and
    // in Finish, is planned for its values.
    if (!cached_fenced_plans_) statements_.push_back(CustomPlansStatement());
    AddFencedWrites();
  }

  void AddFencedWrites() {
    if (!beats_.writes.empty()) Add(beats_, ExtendLeasesStatement(beats_.pointers, clock_now_));
    if (!releases_.writes.empty()) {
      Add(releases_, DeleteClaimsStatement(releases_.pointers, clock_now_));
    }
    // Outcomes in statements of at most kMaxOutcomeBytes (at least one outcome each).
    const std::span<const LeaseWrite* const> finishes = finishes_.pointers;
    finishes_.answer = statements_.size();
    for (size_t at = 0; at < finishes.size();) {
      size_t end = at + 1;
      for (size_t bytes = OutcomeBytes(*finishes[at]); end < finishes.size(); ++end) {
        bytes += OutcomeBytes(*finishes[end]);
        if (bytes > kMaxOutcomeBytes) break;
      }
      statements_.push_back(
          RecordOutcomesStatement(finishes.subspan(at, end - at), clock_now_, retention_));
      ++finishes_.answers;
      at = end;
    }
  }

  void Add(Group& group, Statement statement) {
    group.answer = statements_.size();
    group.answers = 1;
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

  void SettleClaims(const postgres::Result& answer) {
    std::unordered_map<std::string, KeyRecord> won = ById(Records(answer));
    for (size_t i : claims_.writes) {
      const LeaseWrite& write = writes_[i];
      const std::string id = ScopeId(write.scope);
      if (auto it = won.find(id); it != won.end()) {
        results_[i] = Claimed(write, std::move(it->second));
      } else if (auto row = locked_.find(id); row == locked_.end()) {
        unexplained_.push_back(i);  // a concurrent claimer's new row was in the way
      } else if (const ClaimParams claim = ClaimAt(write, now_, retention_);
                 ClaimWritesOver(row->second, claim, rules_.take_over_lapsed)) {
        overs_.emplace_back(i, row->second.expires_ms <= now_
                                   ? ReplaceExpiredStatement(claim, row->second.fence)
                                   : TakeOverLapsedStatement(claim, row->second.fence));
      } else {
        results_[i] = Found(write, row->second);
      }
    }
  }

  // The fenced writes of `group`, `changed` naming the scopes its statements changed.
  void Settle(const Group& group, const std::vector<std::string>& changed) {
    const std::unordered_set<std::string> done(changed.begin(), changed.end());
    for (size_t i : group.writes) {
      const LeaseWrite& write = writes_[i];
      const std::string id = ScopeId(write.scope);
      if (done.contains(id)) {
        if (write.kind == LeaseWrite::Kind::kHeartbeat) {
          results_[i].lease_until_ms = now_ + write.lease.count();
        }
      } else if (auto row = locked_.find(id); row != locked_.end()) {
        Explain(i, row->second);  // locked since before the write: what it found
      } else {
        unexplained_.push_back(i);
      }
    }
  }

  // The claims written over and the reads of the writes not explained yet, in one pipeline.
  // nullopt: see SetBatchOutcome.
  absl::StatusOr<std::optional<std::vector<LeaseWriteResult>>> Finish() {
    std::vector<Statement> statements;
    if (cached_fenced_plans_) statements.push_back(CustomPlansStatement());
    const size_t first = statements.size();
    for (auto& [i, statement] : overs_) statements.push_back(std::move(statement));
    std::vector<const Scope*> scopes;
    for (size_t i : unexplained_) scopes.push_back(&writes_[i].scope);
    if (!scopes.empty()) statements.push_back(ReadRowsStatement(scopes));
    IDEM_ASSIGN_OR_RETURN(std::vector<postgres::Result> answers, RunChunked(statements));
    for (size_t n = 0; n < overs_.size(); ++n) {
      std::optional<KeyRecord> won = FirstRecord(answers[first + n]);
      if (!won.has_value()) return std::nullopt;  // its locked row did not match: never expected
      results_[overs_[n].first] = Claimed(writes_[overs_[n].first], *std::move(won));
    }
    if (scopes.empty()) return std::move(results_);
    std::unordered_map<std::string, KeyRecord> found = ById(Records(answers.back()));
    for (size_t i : unexplained_) {
      const LeaseWrite& write = writes_[i];
      auto it = found.find(ScopeId(write.scope));
      if (it == found.end()) {
        if (write.kind == LeaseWrite::Kind::kClaim) return std::nullopt;  // vanished since
        Explain(i, std::nullopt);
        continue;
      }
      if (write.kind == LeaseWrite::Kind::kClaim &&
          ClaimWritesOver(it->second, ClaimAt(write, now_, retention_), rules_.take_over_lapsed)) {
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

  LeaseWriteResult Result(absl::Status status) const {
    return {.status = std::move(status), .now_ms = now_};
  }

  PgConnection& conn_;
  // The fenced writes run from the plans cached on the connection (the table was large at its
  // last batch); custom plans are set after them, for Finish's statements.
  const bool cached_fenced_plans_ = conn_.key_table_bytes() >= kLargeKeyTableBytes;
  std::optional<int64_t> clock_now_;  // the caller's clock; nullopt: the database's
  const Millis retention_;
  const BatchRules rules_;
  const std::span<const LeaseWrite> writes_;
  int64_t now_ = 0;
  std::vector<std::pair<size_t, absl::Status>> invalid_;
  std::vector<Statement> statements_;
  Group claims_, beats_, releases_, finishes_;
  std::unordered_map<std::string, KeyRecord> locked_;
  std::vector<LeaseWriteResult> results_;
  std::vector<std::pair<size_t, Statement>> overs_;  // claims that write over their locked row
  std::vector<size_t> unexplained_;  // writes whose statement changed nothing, rows not locked
};

}  // namespace

absl::StatusOr<SetBatchOutcome> ApplySetBased(PgConnection& conn, const Clock* clock,
                                              Millis retention, BatchRules rules,
                                              std::span<const LeaseWrite> writes,
                                              std::span<const size_t> order,
                                              std::span<const Scope* const> scopes) {
  SetBatch batch(conn, clock, retention, rules, writes);
  return batch.Apply(order, scopes);
}

}  // namespace idem::postgres
