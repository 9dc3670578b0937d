#include "store/sqlite/key_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <string>

#include "common/status_macros.h"
#include "core/stale_fence.h"
#include "store/sqlite/header_codec.h"

namespace idem::sqlite {
namespace {

// A lease has passed (key_table.h, "Time rules"), with ?B the host clock's boot and ?H its
// reading (both NULL without a host clock) and ?N the wall clock: written out in each statement
// as (CASE WHEN lease_boot = ?B THEN lease_host <= ?H ELSE lease_until <= ?N END).

#define IDEM_KEY_COLUMNS                                                                 \
  " tenant, key, fingerprint, state, fence, owner, lease_until, status, headers, body, " \
  "created, updated, expires, claim_nonce "
static_assert(std::string_view(IDEM_KEY_COLUMNS) == std::string_view(kKeyColumns));

absl::StatusOr<KeyState> StateFromText(std::string_view text) {
  if (text == "in_progress") return KeyState::kInProgress;
  if (text == "completed") return KeyState::kCompleted;
  if (text == "failed_final") return KeyState::kFailedFinal;
  return absl::DataLossError(
      fmt::format("a stored record has the unknown state '{}'; delete the record", text));
}

// Steps `stmt` once: the record it returned, or nullopt when it returned no row.
absl::StatusOr<std::optional<KeyRecord>> StepRecord(Statement& stmt) {
  IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
  if (!has_row) return std::nullopt;
  IDEM_ASSIGN_OR_RETURN(KeyRecord record, ReadRecord(stmt));
  // Drain so that RETURNING statements finish their write before the statement is reset.
  IDEM_RETURN_IF_ERROR(stmt.Step().status());
  return record;
}

absl::StatusOr<int64_t> StepChanges(Connection& conn, Statement& stmt) {
  IDEM_RETURN_IF_ERROR(stmt.Step().status());
  return sqlite3_changes64(conn.db());
}

// Binds ?1 tenant, ?2 key.
absl::Status BindScope(Statement& stmt, const Scope& scope) {
  IDEM_RETURN_IF_ERROR(stmt.BindText(1, scope.tenant));
  return stmt.BindText(2, scope.key);
}

// Binds ?1..?7 of a claim: tenant, key, fingerprint, owner, now, lease_until, expires; ?10,
// ?11: the host clock's boot and reading; ?15: the claim's nonce (NULL when it has none).
absl::Status BindClaim(Statement& stmt, const ClaimParams& p) {
  IDEM_RETURN_IF_ERROR(BindScope(stmt, p.scope));
  IDEM_RETURN_IF_ERROR(stmt.BindText(3, p.fingerprint));
  IDEM_RETURN_IF_ERROR(stmt.BindText(4, p.owner));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(5, p.now_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(6, p.lease_until_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(7, p.expires_ms));
  IDEM_RETURN_IF_ERROR(BindHost(stmt, 10, p.host));
  if (p.claim_nonce.empty()) return stmt.BindNull(15);
  return stmt.BindText(15, p.claim_nonce);
}

// Binds ?12..?14, the claim's note: status, `headers` (its encoding, which the caller keeps alive
// while the statement runs) and body.
absl::Status BindNote(Statement& stmt, const ClaimParams& p, const std::string& headers) {
  IDEM_RETURN_IF_ERROR(stmt.BindInt(12, p.note != nullptr ? p.note->status : 0));
  IDEM_RETURN_IF_ERROR(stmt.BindBlob(13, headers));
  return stmt.BindBlob(14, p.note != nullptr ? std::string_view(p.note->body) : "");
}

std::string NoteHeaders(const ClaimParams& p) {
  return p.note != nullptr ? EncodeHeaders(p.note->headers) : std::string();
}

}  // namespace

absl::StatusOr<KeyRecord> ReadRecord(const Statement& row) {
  KeyRecord record;
  record.scope.tenant = row.ColumnBytes(0);
  record.scope.key = row.ColumnBytes(1);
  record.fingerprint = row.ColumnBytes(2);
  IDEM_ASSIGN_OR_RETURN(record.state, StateFromText(row.ColumnBytes(3)));
  record.fence = row.ColumnInt(4);
  record.owner = row.ColumnBytes(5);
  record.lease_until_ms = row.ColumnInt(6);
  record.response.status = static_cast<int>(row.ColumnInt(7));
  IDEM_ASSIGN_OR_RETURN(record.response.headers, DecodeHeaders(row.ColumnBytes(8)));
  record.response.body = row.ColumnBytes(9);
  record.created_ms = row.ColumnInt(10);
  record.updated_ms = row.ColumnInt(11);
  record.expires_ms = row.ColumnInt(12);
  record.claim_nonce = row.ColumnBytes(13);
  return record;
}

absl::Status BindHost(Statement& stmt, int index, HostTime host) {
  if (host.boot.empty()) {
    IDEM_RETURN_IF_ERROR(stmt.BindNull(index));
    return stmt.BindNull(index + 1);
  }
  IDEM_RETURN_IF_ERROR(stmt.BindText(index, host.boot));
  return stmt.BindInt(index + 1, host.millis);
}

absl::StatusOr<int64_t> NextFence(Connection& conn) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt, conn.Prepare("SELECT last + 1 FROM idem_fence"));
  IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
  if (!has_row) {
    return absl::DataLossError(
        "the store's fence counter (table idem_fence) has no row; restore it from a backup or "
        "insert (1, the highest fence ever stored) before claiming keys again");
  }
  const int64_t fence = stmt.ColumnInt(0);
  IDEM_RETURN_IF_ERROR(stmt.Step().status());
  return fence;
}

absl::Status UseFence(Connection& conn, int64_t fence) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt,
                        conn.Prepare("UPDATE idem_fence SET last = ?1 WHERE last < ?1"));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(1, fence));
  return stmt.Step().status();
}

absl::StatusOr<std::optional<KeyRecord>> InsertClaim(Connection& conn, const ClaimParams& p,
                                                     int64_t fence) {
  // No RETURNING: SQLite would buffer the returned row in a temporary table at every claim. The
  // new record is exactly the values inserted, so it is built from them.
  const std::string note_headers = NoteHeaders(p);  // the statement borrows it
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner, "
                   "lease_until, created, updated, expires, lease_boot, lease_host, status, "
                   "headers, body, claim_nonce) VALUES (?1, ?2, ?3, 'in_progress', ?8, ?4, ?6, "
                   "?5, ?5, ?7, ?10, ?11 + ?6 - ?5, ?12, ?13, ?14, ?15) "
                   "ON CONFLICT (tenant, key) DO NOTHING"));
  IDEM_RETURN_IF_ERROR(BindClaim(stmt, p));
  IDEM_RETURN_IF_ERROR(BindNote(stmt, p, note_headers));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(8, fence));
  IDEM_ASSIGN_OR_RETURN(int64_t inserted, StepChanges(conn, stmt));
  if (inserted != 1) return std::nullopt;
  std::optional<KeyRecord> record(std::in_place);
  record->scope = p.scope;
  record->fingerprint = p.fingerprint;
  record->state = KeyState::kInProgress;
  record->fence = fence;
  record->owner = p.owner;
  record->claim_nonce = p.claim_nonce;
  record->lease_until_ms = p.lease_until_ms;
  record->created_ms = p.now_ms;
  record->updated_ms = p.now_ms;
  record->expires_ms = p.expires_ms;
  if (p.note != nullptr) record->response = *p.note;
  return record;
}

absl::StatusOr<std::optional<KeyRecord>> ReplaceExpired(Connection& conn, const ClaimParams& p,
                                                        int64_t fence) {
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("UPDATE idem_keys SET fingerprint = ?3, state = 'in_progress', "
                   "fence = max(?8, fence + 1), owner = ?4, lease_until = ?6, status = 0, headers = x'', "
                   "body = x'', created = ?5, updated = ?5, expires = ?7, lease_boot = ?10, "
                   "lease_host = ?11 + ?6 - ?5, claim_nonce = ?15 "
                   "WHERE tenant = ?1 AND key = ?2 AND expires <= ?5 RETURNING" IDEM_KEY_COLUMNS));
  IDEM_RETURN_IF_ERROR(BindClaim(stmt, p));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(8, fence));
  return StepRecord(stmt);
}

absl::StatusOr<std::optional<KeyRecord>> TakeOverLapsed(Connection& conn, const ClaimParams& p,
                                                        int64_t expected_fence, int64_t fence) {
  const std::string note_headers = NoteHeaders(p);  // the statement borrows it
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("UPDATE idem_keys SET fence = ?9, owner = ?4, lease_until = ?6, "
                   "updated = ?5, expires = max(expires, ?6), lease_boot = ?10, "
                   "lease_host = ?11 + ?6 - ?5, status = ?12, headers = ?13, body = ?14, "
                   "claim_nonce = ?15 WHERE tenant = ?1 AND key = ?2 AND fence = ?8 "
                   "AND state = 'in_progress' AND fingerprint = ?3 AND expires > ?5 "
                   "AND (CASE WHEN lease_boot = ?10 THEN lease_host <= ?11 "
                   "ELSE lease_until <= ?5 END) "
                   "RETURNING" IDEM_KEY_COLUMNS));
  IDEM_RETURN_IF_ERROR(BindClaim(stmt, p));
  IDEM_RETURN_IF_ERROR(BindNote(stmt, p, note_headers));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(8, expected_fence));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(9, fence));
  return StepRecord(stmt);
}

absl::StatusOr<std::optional<KeyRecord>> TakeOverKey(Connection& conn, const ClaimParams& p,
                                                     int64_t expected_fence) {
  IDEM_ASSIGN_OR_RETURN(int64_t fence, NextFence(conn));
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> taken,
                        TakeOverLapsed(conn, p, expected_fence, fence));
  if (taken.has_value()) IDEM_RETURN_IF_ERROR(UseFence(conn, fence));
  return taken;
}

namespace {

// UpsertClaim for a key that has a row: one statement replaces it when expired or takes it over
// when its lease lapsed.
absl::StatusOr<std::optional<UpsertedClaim>> ReclaimExisting(Connection& conn,
                                                             const ClaimParams& p, int64_t fence) {
  // The SET expressions read the old row: an expired one is replaced whole, a lapsed one keeps
  // its created time and at least its expiry. Both get the claim's note.
  const std::string note_headers = NoteHeaders(p);  // the statement borrows it
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner, "
                   "lease_until, created, updated, expires, lease_boot, lease_host, status, "
                   "headers, body, claim_nonce) VALUES (?1, ?2, ?3, 'in_progress', ?8, ?4, ?6, "
                   "?5, ?5, ?7, ?10, ?11 + ?6 - ?5, ?12, ?13, ?14, ?15) "
                   "ON CONFLICT (tenant, key) DO UPDATE SET fingerprint = ?3, "
                   "state = 'in_progress', fence = max(?8, fence + 1), owner = ?4, "
                   "lease_until = ?6, "
                   "lease_boot = ?10, lease_host = ?11 + ?6 - ?5, "
                   "status = ?12, headers = ?13, body = ?14, claim_nonce = ?15, "
                   "created = CASE WHEN expires <= ?5 THEN ?5 ELSE created END, updated = ?5, "
                   "expires = CASE WHEN expires <= ?5 THEN ?7 ELSE max(expires, ?6) END "
                   "WHERE expires <= ?5 OR (state = 'in_progress' AND fingerprint = ?3 AND "
                   "(CASE WHEN lease_boot = ?10 THEN lease_host <= ?11 ELSE lease_until <= ?5 "
                   "END)) "
                   "RETURNING created, expires, fence"));
  IDEM_RETURN_IF_ERROR(BindClaim(stmt, p));
  IDEM_RETURN_IF_ERROR(BindNote(stmt, p, note_headers));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(8, fence));
  IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
  if (!has_row) return std::nullopt;
  std::optional<UpsertedClaim> won(std::in_place);
  KeyRecord& record = won->record;
  record.created_ms = stmt.ColumnInt(0);
  record.expires_ms = stmt.ColumnInt(1);
  record.fence = stmt.ColumnInt(2);
  IDEM_RETURN_IF_ERROR(stmt.Step().status());
  // A lease is positive, so a lapsed lease was claimed before now: only a takeover keeps an
  // older created time.
  won->taken_over = record.created_ms != p.now_ms;
  record.scope = p.scope;
  record.fingerprint = p.fingerprint;
  record.state = KeyState::kInProgress;
  record.owner = p.owner;
  record.claim_nonce = p.claim_nonce;
  record.lease_until_ms = p.lease_until_ms;
  record.updated_ms = p.now_ms;
  if (p.note != nullptr) record.response = *p.note;
  return won;
}

}  // namespace

absl::StatusOr<std::optional<UpsertedClaim>> UpsertClaim(Connection& conn, const ClaimParams& p,
                                                         int64_t fence) {
  // A new key, the usual case, is a plain insert. The upsert's RETURNING, needed for the old
  // row's times, makes SQLite open a temporary table for every execution (a B-tree, a pager and
  // ten allocations per claim).
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> inserted, InsertClaim(conn, p, fence));
  if (inserted.has_value()) {
    return std::optional<UpsertedClaim>(UpsertedClaim{.record = *std::move(inserted)});
  }
  return ReclaimExisting(conn, p, fence);
}

absl::StatusOr<std::optional<KeyRecord>> SelectLive(Connection& conn, const Scope& scope,
                                                    int64_t now_ms) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt,
                        conn.Prepare("SELECT" IDEM_KEY_COLUMNS "FROM idem_keys "
                                     "WHERE tenant = ?1 AND key = ?2 AND expires > ?3"));
  IDEM_RETURN_IF_ERROR(BindScope(stmt, scope));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(3, now_ms));
  return StepRecord(stmt);
}

absl::StatusOr<int64_t> ExtendLease(Connection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms, int64_t lease_until_ms, HostTime host) {
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("UPDATE idem_keys SET lease_until = ?5, updated = ?4, "
                   "expires = max(expires, ?5), lease_boot = ?6, lease_host = ?7 + ?5 - ?4 "
                   "WHERE tenant = ?1 AND key = ?2 AND fence = ?3 "
                   "AND state = 'in_progress' AND expires > ?4"));
  IDEM_RETURN_IF_ERROR(BindScope(stmt, scope));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(3, fence));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(4, now_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(5, lease_until_ms));
  IDEM_RETURN_IF_ERROR(BindHost(stmt, 6, host));
  return StepChanges(conn, stmt);
}

absl::StatusOr<int64_t> RecordOutcome(Connection& conn, const Scope& scope, int64_t fence,
                                      KeyState state, const StoredResponse& response,
                                      int64_t now_ms, int64_t expires_ms) {
  // Declared before the statement, which borrows it until it is destroyed.
  const std::string headers = EncodeHeaders(response.headers);
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("UPDATE idem_keys SET state = ?5, status = ?6, headers = ?7, body = ?8, "
                   "updated = ?4, expires = ?9 WHERE tenant = ?1 AND key = ?2 AND fence = ?3 "
                   "AND state = 'in_progress' AND expires > ?4"));
  IDEM_RETURN_IF_ERROR(BindScope(stmt, scope));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(3, fence));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(4, now_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindText(5, KeyStateName(state)));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(6, response.status));
  IDEM_RETURN_IF_ERROR(stmt.BindBlob(7, headers));
  IDEM_RETURN_IF_ERROR(stmt.BindBlob(8, response.body));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(9, expires_ms));
  return StepChanges(conn, stmt);
}

absl::StatusOr<int64_t> DeleteClaim(Connection& conn, const Scope& scope, int64_t fence,
                                    int64_t now_ms) {
  IDEM_ASSIGN_OR_RETURN(Statement stmt,
                        conn.Prepare("DELETE FROM idem_keys WHERE tenant = ?1 AND key = ?2 AND "
                                     "fence = ?3 AND state = 'in_progress' AND expires > ?4"));
  IDEM_RETURN_IF_ERROR(BindScope(stmt, scope));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(3, fence));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(4, now_ms));
  return StepChanges(conn, stmt);
}

absl::StatusOr<ClaimResult> ClaimKey(Connection& conn, const ClaimParams& p, bool take_over_lapsed,
                                     int64_t min_fence) {
  IDEM_ASSIGN_OR_RETURN(int64_t fence, NextFence(conn));
  fence = std::max(fence, min_fence);
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> won, InsertClaim(conn, p, fence));
  if (!won.has_value()) {
    IDEM_ASSIGN_OR_RETURN(won, ReplaceExpired(conn, p, fence));
  }
  if (!won.has_value()) {
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn, p.scope, p.now_ms));
    if (!live.has_value()) {
      return absl::InternalError(fmt::format(
          "key '{}' of tenant '{}' was neither insertable nor present under the write lock",
          p.scope.key, p.scope.tenant));
    }
    // Only the same request takes a lapsed claim over; another one's is reported as it is.
    // Whether the lease passed is TakeOverLapsed's to say (on the host clock, key_table.h).
    if (!take_over_lapsed || live->state != KeyState::kInProgress ||
        live->fingerprint != p.fingerprint) {
      return ClaimResult{false, *std::move(live)};
    }
    IDEM_ASSIGN_OR_RETURN(won, TakeOverLapsed(conn, p, live->fence, fence));
    if (!won.has_value()) return ClaimResult{false, *std::move(live)};
  }
  IDEM_RETURN_IF_ERROR(UseFence(conn, won->fence));  // a replacement's may be above `fence`
  return ClaimResult{true, *std::move(won)};
}

absl::Status StaleFenceError(Connection& conn, const Scope& scope, int64_t fence, int64_t now_ms,
                             std::string_view operation) {
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> live, SelectLive(conn, scope, now_ms));
  return idem::StaleFenceError(operation, scope, fence, live);
}

#undef IDEM_KEY_COLUMNS

}  // namespace idem::sqlite
