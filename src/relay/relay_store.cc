#include "relay/relay_store.h"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <set>
#include <string_view>

#include "common/status_macros.h"
#include "outbox/outbox_rows.h"

namespace idem::relay {
namespace {

// A message `o` that is pending and due at $1, with no earlier unsent message of its aggregate
// that waits for a later attempt, nor (when $2 = 0) a dead one. "e.state <> 'sent'" adds nothing
// to the meaning: it lets the planner use the partial index idem_outbox_unsent (aggregate_key,
// seq); without it SQLite searched every earlier row for each candidate (quadratic: 469
// messages/s at batch 1000 over 20,000 messages).
// On PostgreSQL the subquery ends in OFFSET 0: PostgreSQL turns a NOT EXISTS into an anti join,
// and chose a hash anti join over a Seq Scan of the whole outbox, so every pending row was read,
// hashed and sorted before the LIMIT applied (EXPLAIN ANALYZE: 15-90 ms per statement at 20,000
// rows). OFFSET 0 keeps the subquery a probe of idem_outbox_unsent per candidate, and the scan
// walks idem_outbox_pending in seq order and stops at the LIMIT.
std::string Runnable(Dialect dialect) {
  return fmt::format(
      "o.state = 'pending' AND o.next_attempt_ms <= $1 AND NOT EXISTS ("
      "SELECT 1 FROM idem_outbox e WHERE e.aggregate_key = o.aggregate_key AND e.seq < o.seq AND "
      "e.state <> 'sent' AND "
      "((e.state = 'pending' AND e.next_attempt_ms > $1) OR (e.state = 'dead' AND $2 = 0)){})",
      dialect == Dialect::kPostgres ? " OFFSET 0" : "");
}

// ... and whose aggregate no other batch holds a live lease on: another relay's, or this
// relay's other than the unfinished batch ($6) a claim ahead may take over (PostgreSQL; a probe
// of the lease's primary key: as an anti join, a lease table the planner had no statistics for
// yet was scanned once per candidate).
constexpr std::string_view kUnleasedByOthers =
    " AND NOT EXISTS (SELECT 1 FROM idem_outbox_leases l WHERE l.aggregate_key = o.aggregate_key "
    "AND l.lease_until_ms > $1 AND l.token <> $6 OFFSET 0)";

// "o.seq is none of the seqs in the JSON array `param`" (PostgreSQL): a hashed subplan, one
// lookup per row.
std::string NotIn(std::string_view param) {
  return fmt::format("o.seq NOT IN (SELECT jsonb_array_elements_text({}::jsonb)::bigint)", param);
}

// `seqs` as a JSON array, the form one statement takes a list of seqs in.
std::string JsonArray(const std::vector<int64_t>& seqs) {
  std::string list = "[";
  for (int64_t seq : seqs) {
    if (list.size() > 1) list += ',';
    list += std::to_string(seq);
  }
  list += ']';
  return list;
}

// `keys` as a JSON array of strings.
std::string KeyList(const std::vector<std::string>& keys) {
  boost::json::array array;
  array.reserve(keys.size());
  for (const std::string& key : keys) array.emplace_back(boost::json::string(key));
  return boost::json::serialize(array);
}

// The seqs of `batch`'s messages as a JSON array.
std::string SeqList(const Batch& batch) {
  std::vector<int64_t> seqs;
  seqs.reserve(batch.messages.size());
  for (const OutboxRecord& message : batch.messages) seqs.push_back(message.seq);
  return JsonArray(seqs);
}

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
  const std::string list = JsonArray(seqs);
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

// Releases `batch`'s leases and, when `next` is given back, its successor's, by primary key
// ("WHERE token = ..." alone scanned the whole lease table). The leases a kept successor took
// over carry its token now and stay held: they are left out of the list.
absl::Status ReleaseLeases(Transaction& tx, const Batch& batch, const Successor& next) {
  std::vector<std::string> release = batch.leased;
  std::string other_token = batch.token;
  if (next.batch != nullptr && next.keep) {
    const std::set<std::string_view> kept(next.batch->leased.begin(), next.batch->leased.end());
    std::erase_if(release, [&](const std::string& key) { return kept.contains(key); });
  } else if (next.batch != nullptr) {
    release.insert(release.end(), next.batch->leased.begin(), next.batch->leased.end());
    other_token = next.batch->token;
  }
  if (release.empty()) return absl::OkStatus();
  const SqlValue params[] = {batch.token, KeyList(release), other_token};
  return tx
      .Execute(
          "UPDATE idem_outbox_leases SET lease_until_ms = 0 WHERE aggregate_key IN (SELECT "
          "jsonb_array_elements_text($2::jsonb)) AND token IN ($1, $3)",
          params)
      .status();
}

// Renews the leases of `next` that still carry its token until `until_ms`; returns their
// aggregates.
absl::StatusOr<std::vector<std::string>> RenewLeases(Transaction& tx, const Batch& next,
                                                     int64_t until_ms) {
  std::vector<std::string> renewed;
  if (next.leased.empty()) return renewed;
  const SqlValue params[] = {next.token, KeyList(next.leased), until_ms};
  IDEM_ASSIGN_OR_RETURN(
      std::vector<SqlRow> rows,
      tx.Query("UPDATE idem_outbox_leases SET lease_until_ms = $3 WHERE aggregate_key IN (SELECT "
               "jsonb_array_elements_text($2::jsonb)) AND token = $1 RETURNING aggregate_key",
               params));
  for (const SqlRow& row : rows) {
    const std::string* key = row.empty() ? nullptr : std::get_if<std::string>(&row.front());
    if (key == nullptr) return absl::InternalError("renewing leases returned no key");
    renewed.push_back(*key);
  }
  return renewed;
}

// `batch` after its leases were renewed until `until_ms`: only the aggregates of `renewed`, and
// their messages, are still its own.
void KeepRenewed(Batch& batch, const std::vector<std::string>& renewed, int64_t until_ms) {
  batch.lease_until_ms = until_ms;
  const std::set<std::string_view> held(renewed.begin(), renewed.end());
  std::erase_if(batch.messages,
                [&](const OutboxRecord& m) { return !held.contains(m.aggregate_key); });
  std::erase_if(batch.leased, [&](const std::string& key) { return !held.contains(key); });
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
                                        bool let_dead_pass, const Batch* unfinished) {
  if (dialect_ == Dialect::kPostgres) {
    return ClaimPostgres(now_ms, max_messages, lease_ms, let_dead_pass, unfinished);
  }
  if (unfinished != nullptr) {
    return absl::FailedPreconditionError(
        "a SQLite claim holds no lease, so no batch can be claimed before the last is finished");
  }
  const SqlValue params[] = {now_ms, int64_t{let_dead_pass ? 1 : 0}, max_messages};
  const std::string sql =
      fmt::format("SELECT {} FROM idem_outbox o WHERE {} ORDER BY o.seq LIMIT $3", outbox::kColumns,
                  Runnable(Dialect::kSqlite));
  return outbox::InTransaction(store_, [&](StoreTransaction& tx) -> absl::StatusOr<Batch> {
    IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows, tx.Query(sql, params));
    Batch batch{.claimed_ms = now_ms, .lease_until_ms = now_ms + lease_ms};
    IDEM_ASSIGN_OR_RETURN(batch.messages, Decode(rows));
    return batch;
  });
}

absl::StatusOr<Batch> RelayStore::ClaimPostgres(int64_t now_ms, int64_t max_messages,
                                                int64_t lease_ms, bool let_dead_pass,
                                                const Batch* unfinished) {
  Batch batch{.token = fmt::format("{}:{}", owner_, ++claims_),
              .claimed_ms = now_ms,
              .lease_until_ms = now_ms + lease_ms};
  const int64_t dead = let_dead_pass ? 1 : 0;
  const std::string runnable = Runnable(Dialect::kPostgres);
  // The unfinished batch (claiming ahead): its token, whose leases this claim may take over,
  // and its messages, which it leaves out (until that batch is finished they are still pending,
  // and due). Without one: a token no lease carries and no message.
  const std::string unfinished_token = unfinished != nullptr ? unfinished->token : "";
  const std::string unfinished_seqs = unfinished != nullptr ? SeqList(*unfinished) : "[]";
  // One statement leases the aggregates of the first $3 runnable messages: an aggregate without
  // a lease row gets one carrying this claim's token (a row this statement inserts is its own
  // until commit; a concurrent insert of the same key waits, then does nothing; a key that has a
  // row is not inserted at all, since ON CONFLICT would wait for a relay holding that row), and
  // a free lease row, or one of the unfinished batch ($6), is taken FOR UPDATE SKIP LOCKED (a row
  // another relay holds is skipped, and so is one the unfinished batch is releasing right now:
  // that aggregate waits for the next claim). Both parts see the statement's snapshot, so the
  // UPDATE never sees the rows the INSERT adds.
  const std::string lease = fmt::format(
      "WITH c AS MATERIALIZED (SELECT DISTINCT k.aggregate_key FROM (SELECT o.aggregate_key "
      "FROM idem_outbox o WHERE {}{} AND {} ORDER BY o.seq LIMIT $3) k), "
      "added AS (INSERT INTO idem_outbox_leases (aggregate_key, token, lease_until_ms) "
      "SELECT c.aggregate_key, $4, $5 FROM c WHERE NOT EXISTS (SELECT 1 FROM idem_outbox_leases "
      "x WHERE x.aggregate_key = c.aggregate_key OFFSET 0) ON CONFLICT (aggregate_key) DO NOTHING "
      "RETURNING aggregate_key), "
      "taken AS (UPDATE idem_outbox_leases SET token = $4, lease_until_ms = $5 WHERE "
      "aggregate_key IN (SELECT l.aggregate_key FROM idem_outbox_leases l WHERE "
      "(l.lease_until_ms <= $1 OR l.token = $6) AND l.aggregate_key IN (SELECT aggregate_key "
      "FROM c) FOR UPDATE SKIP LOCKED) RETURNING aggregate_key) "
      "SELECT aggregate_key FROM added UNION ALL SELECT aggregate_key FROM taken",
      runnable, kUnleasedByOthers, NotIn("$7"));
  // The messages are read by a statement of their own: its snapshot is taken after the leases
  // were, so it sees every message the lease's previous holder recorded as sent. The lease test
  // is a probe of the lease's primary key per message (OFFSET 0 again): as a semi join, the
  // planner fetched every unsent message of every leased aggregate and sorted them (535 ms).
  const std::string read = fmt::format(
      "SELECT {} FROM idem_outbox o WHERE {} AND {} AND EXISTS (SELECT 1 FROM idem_outbox_leases "
      "m WHERE m.aggregate_key = o.aggregate_key AND m.token = $3 OFFSET 0) ORDER BY o.seq "
      "LIMIT $4",
      outbox::kColumns, runnable, NotIn("$5"));
  return outbox::InTransaction(store_, [&](StoreTransaction& tx) -> absl::StatusOr<Batch> {
    // For this transaction only: the per-row probes make the planner's cost estimates large, and
    // over jit_above_cost PostgreSQL compiled the read with LLVM first (~38 ms per claim, for a
    // 7 ms query). And a probe by plain index scan lets PostgreSQL mark the index entries of
    // sent rows dead once it met them, where a bitmap scan fetched every such row again on each
    // claim (EXPLAIN ANALYZE of the lease statement, 5,000 of 20,000 sent: 43 -> 32 ms).
    IDEM_RETURN_IF_ERROR(tx.Execute("SELECT set_config('jit', 'off', true), "
                                    "set_config('enable_bitmapscan', 'off', true)")
                             .status());
    const SqlValue take[] = {
        now_ms,           dead,           max_messages, batch.token, batch.lease_until_ms,
        unfinished_token, unfinished_seqs};
    IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> leased, tx.Query(lease, take));
    batch.leased.reserve(leased.size());
    for (const SqlRow& row : leased) {
      const std::string* key = row.empty() ? nullptr : std::get_if<std::string>(&row.front());
      if (key == nullptr) return absl::InternalError("leasing aggregates returned no key");
      batch.leased.push_back(*key);
    }
    if (batch.leased.empty()) return batch;
    const SqlValue mine[] = {now_ms, dead, batch.token, max_messages, unfinished_seqs};
    IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows, tx.Query(read, mine));
    IDEM_ASSIGN_OR_RETURN(batch.messages, Decode(rows));
    return batch;
  });
}

absl::Status RelayStore::Finish(const Batch& batch, const std::vector<Outcome>& outcomes,
                                int64_t now_ms, const std::function<Successor()>& successor) {
  Successor next;
  std::vector<std::string> renewed;
  absl::Status done =
      outbox::InTransaction(store_, [&](StoreTransaction& tx) -> absl::StatusOr<bool> {
        std::vector<int64_t> sent;
        for (const Outcome& outcome : outcomes) {
          if (outcome.kind == Outcome::Kind::kSent) {
            sent.push_back(outcome.seq);
          } else {
            IDEM_RETURN_IF_ERROR(Record(tx, outcome));
          }
        }
        IDEM_RETURN_IF_ERROR(RecordSent(tx, dialect_, sent, now_ms));
        if (successor) next = successor();
        IDEM_RETURN_IF_ERROR(ReleaseLeases(tx, batch, next));
        if (next.batch != nullptr && next.keep && next.renew_until_ms > 0) {
          IDEM_ASSIGN_OR_RETURN(renewed, RenewLeases(tx, *next.batch, next.renew_until_ms));
        }
        return true;
      }).status();
  if (done.ok() && next.batch != nullptr && next.keep && next.renew_until_ms > 0) {
    KeepRenewed(*next.batch, renewed, next.renew_until_ms);
  }
  return done;
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
