#include "store/sqlite/deferred_claims.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "common/status_macros.h"
#include "core/stale_fence.h"
#include "store/sqlite/header_codec.h"
#include "store/sqlite/key_table.h"

namespace idem::sqlite {
namespace {

// SQLite compares savepoint names without regard to ASCII case.
bool SameSavepoint(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

const KeyRecord* DeferredClaims::Unfinished(const Scope& scope) const {
  for (const Entry& entry : entries_) {
    if (entry.finished_at == 0 && entry.record.scope == scope) return &entry.record;
  }
  return nullptr;
}

DeferredClaims::Entry* DeferredClaims::Find(const Scope& scope) {
  for (Entry& entry : entries_) {
    if (entry.finished_at == 0 && entry.record.scope == scope) return &entry;
  }
  return nullptr;
}

absl::StatusOr<std::optional<int64_t>> DeferredClaims::FenceForNewKey(Connection& conn,
                                                                      const Scope& scope) {
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("SELECT last + 1, EXISTS (SELECT 1 FROM idem_keys WHERE tenant = ?1 AND "
                   "key = ?2) FROM idem_fence"));
  IDEM_RETURN_IF_ERROR(stmt.BindText(1, scope.tenant));
  IDEM_RETURN_IF_ERROR(stmt.BindText(2, scope.key));
  IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
  if (!has_row) {
    return absl::DataLossError(
        "the store's fence counter (table idem_fence) has no row; restore it from a backup or "
        "insert (1, the highest fence ever stored) before claiming keys again");
  }
  const int64_t counter_next = stmt.ColumnInt(0);
  const bool has_record = stmt.ColumnInt(1) != 0;
  IDEM_RETURN_IF_ERROR(stmt.Step().status());
  if (has_record) return std::nullopt;
  // Successive values within the transaction, so that its claims' fences differ as immediate
  // claims' do.
  const int64_t fence = std::max(counter_next, next_fence_);
  next_fence_ = fence + 1;
  return fence;
}

void DeferredClaims::Add(KeyRecord record) {
  entries_.push_back(Entry{.record = std::move(record), .claimed_at = ++clock_});
}

absl::StatusOr<bool> DeferredClaims::Finish(Connection& conn, const Scope& scope, int64_t fence,
                                            KeyState state, const StoredResponse& response,
                                            int64_t now_ms, int64_t expires_ms) {
  Entry* entry = Find(scope);
  if (entry == nullptr) return false;
  const KeyRecord& claim = entry->record;
  if (fence != claim.fence) return StaleFenceError("recording the outcome", scope, fence, claim);
  // Declared before the statement, which borrows it until it is destroyed.
  const std::string headers = EncodeHeaders(response.headers);
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare("INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, owner, "
                   "lease_until, created, updated, expires, status, headers, body) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  IDEM_RETURN_IF_ERROR(stmt.BindText(1, scope.tenant));
  IDEM_RETURN_IF_ERROR(stmt.BindText(2, scope.key));
  IDEM_RETURN_IF_ERROR(stmt.BindText(3, claim.fingerprint));
  IDEM_RETURN_IF_ERROR(stmt.BindText(4, KeyStateName(state)));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(5, claim.fence));
  IDEM_RETURN_IF_ERROR(stmt.BindText(6, claim.owner));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(7, claim.lease_until_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(8, claim.created_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(9, now_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(10, expires_ms));
  IDEM_RETURN_IF_ERROR(stmt.BindInt(11, response.status));
  IDEM_RETURN_IF_ERROR(stmt.BindBlob(12, headers));
  IDEM_RETURN_IF_ERROR(stmt.BindBlob(13, response.body));
  IDEM_RETURN_IF_ERROR(stmt.Step().status());
  entry->finished_at = ++clock_;
  return true;
}

absl::Status DeferredClaims::Flush(Connection& conn) {
  deferring_ = false;
  int64_t highest = 0;
  for (const Entry& entry : entries_) {
    if (entry.finished_at != 0) continue;
    const KeyRecord& claim = entry.record;
    const ClaimParams params{claim.scope,          claim.fingerprint,  claim.owner,
                             claim.created_ms,     claim.lease_until_ms, claim.expires_ms};
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> inserted,
                          InsertClaim(conn, params, claim.fence));
    if (!inserted.has_value()) {
      return absl::InternalError(
          "a key claimed in this transaction was written by its own SQL before its claim was; "
          "leave idem_keys to the store");
    }
    highest = std::max(highest, claim.fence);
  }
  entries_.clear();
  savepoints_.clear();
  return highest > 0 ? UseFence(conn, highest) : absl::OkStatus();
}

void DeferredClaims::OnSavepoint(std::string_view name) {
  savepoints_.push_back(Mark{std::string(name), ++clock_});
}

void DeferredClaims::OnRollbackTo(std::string_view name) {
  // SQLite rolls back to the innermost savepoint of that name and keeps it open.
  auto mark = std::find_if(savepoints_.rbegin(), savepoints_.rend(),
                           [name](const Mark& m) { return SameSavepoint(m.name, name); });
  if (mark == savepoints_.rend()) return;
  const uint64_t at = mark->at;
  savepoints_.erase(mark.base(), savepoints_.end());
  std::erase_if(entries_, [at](const Entry& entry) { return entry.claimed_at > at; });
  for (Entry& entry : entries_) {
    if (entry.finished_at > at) entry.finished_at = 0;
  }
}

void DeferredClaims::OnRelease(std::string_view name) {
  auto mark = std::find_if(savepoints_.rbegin(), savepoints_.rend(),
                           [name](const Mark& m) { return SameSavepoint(m.name, name); });
  if (mark != savepoints_.rend()) savepoints_.erase(std::prev(mark.base()), savepoints_.end());
}

}  // namespace idem::sqlite
