#include "store/postgres/pg_key_table.h"

#include <fmt/format.h>

#include <cstdlib>

#include "common/status_macros.h"
#include "core/stale_fence.h"
#include "store/postgres/pg_key_columns.h"

namespace idem::postgres {
namespace {

// A claim that found the row changing under it this many times in a row reports Unavailable.
constexpr int kMaxClaimRounds = 16;

int64_t Int(const PGresult* result, int row, int column) {
  return std::strtoll(PQgetvalue(result, row, column), nullptr, 10);
}

KeyRecord ReadRecord(const PGresult* result, int row) {
  KeyRecord record;
  record.scope.tenant = PQgetvalue(result, row, 0);
  record.scope.key = PQgetvalue(result, row, 1);
  record.fingerprint = PQgetvalue(result, row, 2);
  record.state = static_cast<KeyState>(Int(result, row, 3));
  record.fence = Int(result, row, 4);
  record.owner = PQgetvalue(result, row, 5);
  record.lease_until_ms = Int(result, row, 6);
  record.response.status = static_cast<int>(Int(result, row, 7));
  record.response.headers = DecodeHeaders(DecodeBytea(result, row, 8));
  record.response.body = DecodeBytea(result, row, 9);
  record.created_ms = Int(result, row, 10);
  record.updated_ms = Int(result, row, 11);
  record.expires_ms = Int(result, row, 12);
  record.claim_nonce = PQgetvalue(result, row, 13);  // "" for NULL
  return record;
}

std::string What(std::string_view operation, const Scope& scope) {
  return fmt::format("{} of key '{}' (tenant '{}')", operation, scope.key, scope.tenant);
}

// The note's columns as parameters: status, headers, body.
int64_t NoteStatus(const ClaimParams& p) { return p.note != nullptr ? p.note->status : 0; }
Blob NoteHeaders(const ClaimParams& p) {
  return Blob{p.note != nullptr ? EncodeHeaders(p.note->headers) : std::string()};
}
Blob NoteBody(const ClaimParams& p) { return Blob{p.note != nullptr ? p.note->body : ""}; }

// The record a claim INSERT wrote: the statement returns only the fence it drew, the rest is what
// it was given (the server sending back and the client decoding 14 columns cost more than the
// INSERT's own index work).
KeyRecord InsertedRecord(const ClaimParams& p, int64_t fence) {
  KeyRecord record;
  record.scope = p.scope;
  record.fingerprint = p.fingerprint;
  record.state = KeyState::kInProgress;
  record.fence = fence;
  record.owner = p.owner;
  record.lease_until_ms = p.lease_until_ms;
  record.response.status = static_cast<int>(NoteStatus(p));
  if (p.note != nullptr) {
    record.response.headers = p.note->headers;
    record.response.body = p.note->body;
  }
  record.created_ms = p.now_ms;
  record.updated_ms = p.now_ms;
  record.expires_ms = p.expires_ms;
  record.claim_nonce = p.claim_nonce;
  return record;
}

absl::StatusOr<std::optional<KeyRecord>> InsertClaim(PgConnection& conn, const ClaimParams& p) {
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(InsertClaimStatement(p)));
  if (PQntuples(result.get()) == 0) return std::nullopt;
  return InsertedRecord(p, Int(result.get(), 0, 0));
}

absl::StatusOr<std::optional<KeyRecord>> SelectAny(PgConnection& conn, const Scope& scope) {
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(SelectAnyStatement(scope)));
  return FirstRecord(result);
}

// Replaces an expired record that still has `expected_fence`, with a fence from the sequence.
absl::StatusOr<std::optional<KeyRecord>> ReplaceExpired(PgConnection& conn, const ClaimParams& p,
                                                        int64_t expected_fence) {
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(ReplaceExpiredStatement(p, expected_fence)));
  return FirstRecord(result);
}

}  // namespace

Statement ReplaceExpiredStatement(const ClaimParams& p, int64_t expected_fence) {
  return {
      "UPDATE idem_keys SET fingerprint = $3, state = 1, fence = nextval('idem_fence_seq'), "
      "owner = $4, "
      "lease_until_ms = $6, status = $9, headers = $10, body = $11, created_ms = $5, "
      "updated_ms = $5, expires_ms = $7, claim_nonce = $12 "
      "WHERE tenant = $1 AND key = $2 AND fence = $8 AND expires_ms <= $5 "
      "RETURNING" IDEM_PG_KEY_COLUMNS,
      {p.scope.tenant, p.scope.key, p.fingerprint, p.owner, p.now_ms, p.lease_until_ms,
       p.expires_ms, expected_fence, NoteStatus(p), NoteHeaders(p), NoteBody(p), p.claim_nonce},
      What("claim (replacing an expired record)", p.scope)};
}

Statement TakeOverLapsedStatement(const ClaimParams& p, int64_t expected_fence) {
  return {
      "UPDATE idem_keys SET fence = nextval('idem_fence_seq'), owner = $3, "
      "lease_until_ms = $5, updated_ms = $4, expires_ms = GREATEST(expires_ms, $5), "
      "status = $8, headers = $9, body = $10, claim_nonce = $11 "
      "WHERE tenant = $1 AND key = $2 AND fence = $6 AND state = 1 AND fingerprint = $7 "
      "AND lease_until_ms <= $4 AND expires_ms > $4 RETURNING" IDEM_PG_KEY_COLUMNS,
      {p.scope.tenant, p.scope.key, p.owner, p.now_ms, p.lease_until_ms, expected_fence,
       p.fingerprint, NoteStatus(p), NoteHeaders(p), NoteBody(p), p.claim_nonce},
      What("takeover", p.scope)};
}

std::vector<KeyRecord> Records(const Result& result) {
  std::vector<KeyRecord> records;
  records.reserve(static_cast<size_t>(PQntuples(result.get())));
  for (int row = 0; row < PQntuples(result.get()); ++row) {
    records.push_back(ReadRecord(result.get(), row));
  }
  return records;
}

std::optional<KeyRecord> FirstRecord(const Result& result) {
  if (PQntuples(result.get()) == 0) return std::nullopt;
  return ReadRecord(result.get(), 0);
}

int64_t RowsChanged(const Result& result) {
  return std::strtoll(PQcmdTuples(result.get()), nullptr, 10);
}

Statement InsertClaimStatement(const ClaimParams& p) {
  return {
      "INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner, "
      "lease_until_ms, created_ms, updated_ms, expires_ms, status, headers, body, claim_nonce) "
      "VALUES ($1, $2, $3, 1, nextval('idem_fence_seq'), $4, $6, $5, $5, $7, $8, $9, $10, $11) "
      "ON CONFLICT (tenant, key) DO NOTHING RETURNING fence",
      {p.scope.tenant, p.scope.key, p.fingerprint, p.owner, p.now_ms, p.lease_until_ms,
       p.expires_ms, NoteStatus(p), NoteHeaders(p), NoteBody(p), p.claim_nonce},
      What("claim", p.scope)};
}

Statement SelectAnyStatement(const Scope& scope) {
  return {"SELECT" IDEM_PG_KEY_COLUMNS "FROM idem_keys WHERE tenant = $1 AND key = $2",
          {scope.tenant, scope.key},
          What("read", scope)};
}

Statement SelectLiveStatement(const Scope& scope, int64_t now_ms) {
  return {"SELECT" IDEM_PG_KEY_COLUMNS
          "FROM idem_keys "
          "WHERE tenant = $1 AND key = $2 AND expires_ms > $3",
          {scope.tenant, scope.key, now_ms},
          What("read", scope)};
}

Statement ExtendLeaseStatement(const Scope& scope, int64_t fence, int64_t now_ms,
                               int64_t lease_until_ms) {
  return {
      "UPDATE idem_keys SET lease_until_ms = $5, updated_ms = $4, "
      "expires_ms = GREATEST(expires_ms, $5) WHERE tenant = $1 AND key = $2 "
      "AND fence = $3 AND state = 1 AND expires_ms > $4",
      {scope.tenant, scope.key, fence, now_ms, lease_until_ms},
      What("heartbeat", scope)};
}

Statement RecordOutcomeStatement(const Scope& scope, int64_t fence, KeyState state,
                                 const StoredResponse& response, int64_t now_ms,
                                 int64_t expires_ms) {
  return {
      "UPDATE idem_keys SET state = $5, status = $6, headers = $7, body = $8, "
      "updated_ms = $4, expires_ms = $9 WHERE tenant = $1 AND key = $2 AND fence = $3 "
      "AND state = 1 AND expires_ms > $4",
      {scope.tenant, scope.key, fence, now_ms, int64_t{static_cast<int>(state)},
       int64_t{response.status}, Blob{EncodeHeaders(response.headers)}, Blob{response.body},
       expires_ms},
      What("outcome", scope)};
}

Statement RecordOutcomeCheckedStatement(const Scope& scope, int64_t fence, KeyState state,
                                        const StoredResponse& response, int64_t now_ms,
                                        int64_t expires_ms) {
  Statement statement = RecordOutcomeStatement(scope, fence, state, response, now_ms, expires_ms);
  // "state + 0 = 1": the row is found by its primary key. Written "state = 1", the plan cached
  // for any values scans the partial index idem_keys_in_progress instead (the planner takes the
  // in_progress rows for few), every entry of it, the dead ones of finished claims included until
  // a vacuum: a cost that grows with the traffic since.
  statement.sql =
      "WITH done AS (UPDATE idem_keys SET state = $5, status = $6, headers = $7, body = $8, "
      "updated_ms = $4, expires_ms = $9 WHERE tenant = $1 AND key = $2 AND fence = $3 "
      "AND state + 0 = 1 AND expires_ms > $4 RETURNING 1) SELECT 1 / count(*) FROM done";
  return statement;
}

Statement DeleteClaimStatement(const Scope& scope, int64_t fence, int64_t now_ms) {
  return {
      "DELETE FROM idem_keys WHERE tenant = $1 AND key = $2 AND "
      "fence = $3 AND state = 1 AND expires_ms > $4",
      {scope.tenant, scope.key, fence, now_ms},
      What("release", scope)};
}

bool ClaimWritesOver(const KeyRecord& found, const ClaimParams& p, bool take_over_lapsed) {
  if (found.expires_ms <= p.now_ms) return true;
  // Only the same request takes a lapsed claim over; another one's is reported as it is.
  return take_over_lapsed && found.state == KeyState::kInProgress &&
         found.lease_until_ms <= p.now_ms && found.fingerprint == p.fingerprint;
}

absl::StatusOr<ClaimResult> ClaimKey(PgConnection& conn, const ClaimParams& p,
                                     bool take_over_lapsed) {
  for (int round = 0; round < kMaxClaimRounds; ++round) {
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> won, InsertClaim(conn, p));
    if (won.has_value()) return ClaimResult{true, *std::move(won)};
    // A committed row blocked the INSERT; READ COMMITTED lets this statement see it.
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectAny(conn, p.scope));
    if (!live.has_value()) continue;  // deleted (Release, sweeper) since: insert again
    if (!ClaimWritesOver(*live, p, take_over_lapsed)) return ClaimResult{false, *std::move(live)};
    if (live->expires_ms <= p.now_ms) {
      IDEM_ASSIGN_OR_RETURN(won, ReplaceExpired(conn, p, live->fence));
      if (won.has_value()) return ClaimResult{true, *std::move(won)};
      continue;  // someone else replaced or deleted it first
    }
    IDEM_ASSIGN_OR_RETURN(won, TakeOverLapsed(conn, p, live->fence));  // a lapsed lease
    if (won.has_value()) return ClaimResult{true, *std::move(won)};
  }
  return absl::UnavailableError(fmt::format(
      "claim of key '{}' (tenant '{}'): the record changed under {} attempts in a row; retry",
      p.scope.key, p.scope.tenant, kMaxClaimRounds));
}

absl::StatusOr<std::optional<KeyRecord>> TakeOverLapsed(PgConnection& conn, const ClaimParams& p,
                                                        int64_t expected_fence) {
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(TakeOverLapsedStatement(p, expected_fence)));
  return FirstRecord(result);
}

absl::StatusOr<std::optional<KeyRecord>> SelectLive(PgConnection& conn, const Scope& scope,
                                                    int64_t now_ms) {
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(SelectLiveStatement(scope, now_ms)));
  return FirstRecord(result);
}

absl::StatusOr<int64_t> ExtendLease(PgConnection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms, int64_t lease_until_ms) {
  IDEM_ASSIGN_OR_RETURN(Result result,
                        conn.Run(ExtendLeaseStatement(scope, fence, now_ms, lease_until_ms)));
  return RowsChanged(result);
}

absl::StatusOr<int64_t> RecordOutcome(PgConnection& conn, const Scope& scope, int64_t fence,
                                      KeyState state, const StoredResponse& response,
                                      int64_t now_ms, int64_t expires_ms) {
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(RecordOutcomeStatement(
                                           scope, fence, state, response, now_ms, expires_ms)));
  return RowsChanged(result);
}

absl::StatusOr<int64_t> DeleteClaim(PgConnection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms) {
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(DeleteClaimStatement(scope, fence, now_ms)));
  return RowsChanged(result);
}

absl::StatusOr<std::vector<KeyRecord>> SelectMany(PgConnection& conn, const KeyQuery& query,
                                                  int64_t now_ms) {
  // $1 now, $2 limit; then one parameter per filter that is set. Text comparisons in the
  // binary "C" collation, so that the order (and paging) does not depend on the database's.
  std::vector<SqlValue> params = {now_ms, query.limit};
  std::string sql = "SELECT" IDEM_PG_KEY_COLUMNS "FROM idem_keys WHERE true";
  const auto add = [&](std::string_view condition, SqlValue value) {
    params.push_back(std::move(value));
    sql += fmt::format(fmt::runtime(condition), params.size());
  };
  if (!query.include_expired) sql += " AND expires_ms > $1";
  if (query.tenant) add(" AND tenant = ${}", *query.tenant);
  if (query.state) add(" AND state = ${}", int64_t{static_cast<int>(*query.state)});
  if (query.older_than) add(" AND created_ms <= $1 - ${}::bigint", query.older_than->count());
  if (query.newer_than) add(" AND created_ms > $1 - ${}::bigint", query.newer_than->count());
  if (query.after) {
    add(" AND (tenant COLLATE \"C\", key COLLATE \"C\") > (${}", query.after->tenant);
    add(", ${})", query.after->key);
  }
  if (query.lapsed) sql += " AND state = 1 AND lease_until_ms <= $1";
  sql += " ORDER BY tenant COLLATE \"C\", key COLLATE \"C\" LIMIT $2";
  IDEM_ASSIGN_OR_RETURN(Result result, conn.Run(sql, params, "listing of keys"));
  return Records(result);
}

absl::StatusOr<int64_t> DeleteAny(PgConnection& conn, const Scope& scope) {
  const SqlValue params[] = {scope.tenant, scope.key};
  IDEM_ASSIGN_OR_RETURN(Result result,
                        conn.Run("DELETE FROM idem_keys WHERE tenant = $1 AND key = $2", params,
                                 What("purge", scope)));
  return RowsChanged(result);
}

absl::StatusOr<int64_t> DeleteExpired(PgConnection& conn, int64_t now_ms, int64_t max_rows) {
  const SqlValue params[] = {now_ms, max_rows};
  IDEM_ASSIGN_OR_RETURN(
      Result result,
      // The predicate is repeated outside: a DELETE that waited for a row lock re-checks only
      // its own WHERE on the row's new version, and a claim may have made the row live again.
      // Rows locked by a claim right now are skipped rather than waited for.
      conn.Run("DELETE FROM idem_keys WHERE (tenant, key) IN (SELECT tenant, key FROM idem_keys "
               "WHERE expires_ms <= $1 AND (state <> 1 OR lease_until_ms <= $1) LIMIT $2 "
               "FOR UPDATE SKIP LOCKED) "
               "AND expires_ms <= $1 AND (state <> 1 OR lease_until_ms <= $1)",
               params, "sweep of expired keys"));
  return RowsChanged(result);
}

absl::Status StaleFenceError(PgConnection& conn, const Scope& scope, int64_t fence, int64_t now_ms,
                             std::string_view operation) {
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn, scope, now_ms));
  return idem::StaleFenceError(operation, scope, fence, live);
}

std::string EncodeHeaders(const std::vector<Header>& headers) {
  std::string out;
  auto put = [&out](std::string_view text) {
    const auto n = static_cast<uint32_t>(text.size());
    for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>(n >> shift));
    out.append(text);
  };
  for (const Header& header : headers) {
    put(header.name);
    put(header.value);
  }
  return out;
}

std::vector<Header> DecodeHeaders(std::string_view bytes) {
  std::vector<Header> out;
  auto take = [&bytes](std::string& into) {
    if (bytes.size() < 4) return false;
    uint32_t n = 0;
    for (int i = 0; i < 4; ++i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    bytes.remove_prefix(4);
    if (bytes.size() < n) return false;
    into.assign(bytes.substr(0, n));
    bytes.remove_prefix(n);
    return true;
  };
  Header header;
  while (take(header.name) && take(header.value)) out.push_back(header);
  return out;
}

}  // namespace idem::postgres
