#include "relay/relay_store.h"

#include <fmt/format.h>

#include "common/status_macros.h"
#include "outbox/outbox_rows.h"

namespace idem::relay {
namespace {

// A message `o` that is pending and due at $1, with no earlier unsent message of its aggregate
// that waits for a later attempt, nor (when $2 = 0) a dead one. "e.state <> 'sent'" adds nothing
// to the meaning: it lets the planner use the partial index idem_outbox_unsent (aggregate_key,
// seq); without it SQLite searched every earlier row for each candidate (quadratic: 469
// messages/s at batch 1000 over 20,000 messages).
constexpr std::string_view kRunnable =
    "o.state = 'pending' AND o.next_attempt_ms <= $1 AND NOT EXISTS ("
    "SELECT 1 FROM idem_outbox e WHERE e.aggregate_key = o.aggregate_key AND e.seq < o.seq AND "
    "e.state <> 'sent' AND "
    "((e.state = 'pending' AND e.next_attempt_ms > $1) OR (e.state = 'dead' AND $2 = 0)))";

// ... and whose aggregate no relay holds a live lease on (PostgreSQL).
constexpr std::string_view kUnleased =
    " AND NOT EXISTS (SELECT 1 FROM idem_outbox_leases l WHERE l.aggregate_key = o.aggregate_key "
    "AND l.lease_until_ms > $1)";

absl::StatusOr<std::vector<OutboxRecord>> Decode(const std::vector<SqlRow>& rows) {
  std::vector<OutboxRecord> records;
  records.reserve(rows.size());
  for (const SqlRow& row : rows) {
    IDEM_ASSIGN_OR_RETURN(OutboxRecord record, outbox::DecodeRecord(row));
    records.push_back(std::move(record));
  }
  return records;
}

// Marks the messages `seqs` sent at `now_ms`, in one statement: the seqs go as one JSON array.
absl::Status RecordSent(Transaction& tx, Dialect dialect, const std::vector<int64_t>& seqs,
                        int64_t now_ms) {
  if (seqs.empty()) return absl::OkStatus();
  std::string list = "[";
  for (int64_t seq : seqs) {
    if (list.size() > 1) list += ',';
    list += std::to_string(seq);
  }
  list += ']';
  const std::string_view each = dialect == Dialect::kPostgres
                                    ? "SELECT jsonb_array_elements_text($1::jsonb)::bigint"
                                    : "SELECT value FROM json_each($1)";
  const SqlValue params[] = {list, now_ms};
  return tx
      .Execute(fmt::format("UPDATE idem_outbox SET state = 'sent', sent_ms = $2, attempts = "
                           "attempts + 1, last_error = '' WHERE state = 'pending' AND seq IN ({})",
                           each),
               params)
      .status();
}

// Records a failed attempt (kRetry or kDead).
absl::Status Record(Transaction& tx, const Outcome& outcome) {
  switch (outcome.kind) {
    case Outcome::Kind::kSent:
      return absl::InternalError("sent messages are recorded by RecordSent");
    case Outcome::Kind::kRetry: {
      const SqlValue params[] = {outcome.seq, outcome.next_attempt_ms, outcome.error};
      return tx
          .Execute(
              "UPDATE idem_outbox SET attempts = attempts + 1, next_attempt_ms = $2, "
              "last_error = $3 WHERE seq = $1 AND state = 'pending'",
              params)
          .status();
    }
    case Outcome::Kind::kDead: {
      const SqlValue params[] = {outcome.seq, outcome.error};
      return tx
          .Execute(
              "UPDATE idem_outbox SET state = 'dead', attempts = attempts + 1, "
              "last_error = $2 WHERE seq = $1 AND state = 'pending'",
              params)
          .status();
    }
  }
  return absl::InternalError("unknown outcome");
}

}  // namespace

absl::StatusOr<Dialect> DialectOf(std::string_view uri) {
  if (uri.starts_with("sqlite:")) return Dialect::kSqlite;
  if (uri.starts_with("postgresql://") || uri.starts_with("postgres://")) {
    return Dialect::kPostgres;
  }
  return absl::InvalidArgumentError(
      "store URI has no known scheme: use sqlite:PATH or postgresql://user@host:port/db");
}

absl::StatusOr<Batch> RelayStore::Claim(int64_t now_ms, int64_t max_messages, int64_t lease_ms,
                                        bool let_dead_pass) {
  if (dialect_ == Dialect::kPostgres) {
    return ClaimPostgres(now_ms, max_messages, lease_ms, let_dead_pass);
  }
  const SqlValue params[] = {now_ms, int64_t{let_dead_pass ? 1 : 0}, max_messages};
  const std::string sql = fmt::format(
      "SELECT {} FROM idem_outbox o WHERE {} ORDER BY o.seq LIMIT $3", outbox::kColumns, kRunnable);
  return outbox::InTransaction(store_, [&](StoreTransaction& tx) -> absl::StatusOr<Batch> {
    IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows, tx.Query(sql, params));
    Batch batch{.lease_until_ms = now_ms + lease_ms};
    IDEM_ASSIGN_OR_RETURN(batch.messages, Decode(rows));
    return batch;
  });
}

absl::StatusOr<Batch> RelayStore::ClaimPostgres(int64_t now_ms, int64_t max_messages,
                                                int64_t lease_ms, bool let_dead_pass) {
  Batch batch{.token = fmt::format("{}:{}", owner_, ++claims_),
              .lease_until_ms = now_ms + lease_ms};
  const int64_t dead = let_dead_pass ? 1 : 0;
  const std::string candidates =
      fmt::format("SELECT o.aggregate_key FROM idem_outbox o WHERE {}{} ORDER BY o.seq LIMIT $3",
                  kRunnable, kUnleased);
  const std::string add_leases = fmt::format(
      "INSERT INTO idem_outbox_leases (aggregate_key, token, lease_until_ms) "
      "SELECT DISTINCT c.aggregate_key, '', 0 FROM ({}) c WHERE NOT EXISTS (SELECT 1 FROM "
      "idem_outbox_leases x WHERE x.aggregate_key = c.aggregate_key) "
      "ON CONFLICT (aggregate_key) DO NOTHING",
      candidates);
  const std::string take_leases = fmt::format(
      "UPDATE idem_outbox_leases SET token = $4, lease_until_ms = $5 WHERE aggregate_key IN ("
      "SELECT l.aggregate_key FROM idem_outbox_leases l WHERE l.lease_until_ms <= $1 AND "
      "l.aggregate_key IN ({}) FOR UPDATE SKIP LOCKED)",
      candidates);
  const std::string read = fmt::format(
      "SELECT {} FROM idem_outbox o WHERE {} AND o.aggregate_key IN (SELECT aggregate_key FROM "
      "idem_outbox_leases WHERE token = $3) ORDER BY o.seq LIMIT $4",
      outbox::kColumns, kRunnable);
  return outbox::InTransaction(store_, [&](StoreTransaction& tx) -> absl::StatusOr<Batch> {
    const SqlValue pick[] = {now_ms, dead, max_messages};
    IDEM_RETURN_IF_ERROR(tx.Execute(add_leases, pick).status());
    const SqlValue take[] = {now_ms, dead, max_messages, batch.token, batch.lease_until_ms};
    IDEM_ASSIGN_OR_RETURN(int64_t leased, tx.Execute(take_leases, take));
    if (leased == 0) return batch;
    const SqlValue mine[] = {now_ms, dead, batch.token, max_messages};
    IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows, tx.Query(read, mine));
    IDEM_ASSIGN_OR_RETURN(batch.messages, Decode(rows));
    return batch;
  });
}

absl::Status RelayStore::Finish(const Batch& batch, const std::vector<Outcome>& outcomes,
                                int64_t now_ms) {
  return outbox::InTransaction(
             store_,
             [&](StoreTransaction& tx) -> absl::StatusOr<bool> {
               std::vector<int64_t> sent;
               for (const Outcome& outcome : outcomes) {
                 if (outcome.kind == Outcome::Kind::kSent) {
                   sent.push_back(outcome.seq);
                 } else {
                   IDEM_RETURN_IF_ERROR(Record(tx, outcome));
                 }
               }
               IDEM_RETURN_IF_ERROR(RecordSent(tx, dialect_, sent, now_ms));
               if (!batch.token.empty()) {
                 const SqlValue params[] = {batch.token};
                 IDEM_RETURN_IF_ERROR(tx.Execute("UPDATE idem_outbox_leases SET lease_until_ms = 0 "
                                                 "WHERE token = $1",
                                                 params)
                                          .status());
               }
               return true;
             })
      .status();
}

absl::StatusOr<int64_t> RelayStore::CountPending() {
  absl::StatusOr<OutboxCounts> counts = CountOutbox(store_);
  if (!counts.ok()) return counts.status();
  return counts->pending;
}

absl::StatusOr<int64_t> RelayStore::DeleteSent(int64_t sent_before_ms, int64_t max_rows) {
  return outbox::InTransaction(store_, [&](StoreTransaction& tx) -> absl::StatusOr<int64_t> {
    const SqlValue params[] = {sent_before_ms, max_rows};
    IDEM_ASSIGN_OR_RETURN(
        int64_t deleted,
        tx.Execute("DELETE FROM idem_outbox WHERE seq IN (SELECT seq FROM idem_outbox WHERE "
                   "state = 'sent' AND sent_ms < $1 ORDER BY sent_ms LIMIT $2)",
                   params));
    if (dialect_ == Dialect::kPostgres) {
      const SqlValue idle[] = {sent_before_ms};
      IDEM_RETURN_IF_ERROR(
          tx.Execute("DELETE FROM idem_outbox_leases WHERE lease_until_ms < $1", idle).status());
    }
    return deleted;
  });
}

}  // namespace idem::relay
