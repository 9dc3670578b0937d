#include "store/sqlite/transaction_claims.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>

#include "common/status_macros.h"
#include "core/stale_fence.h"
#include "store/sqlite/header_codec.h"

namespace idem::sqlite {
namespace {

// SQLite compares savepoint names without regard to ASCII case.
bool SameSavepoint(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

absl::Status MissingCounter() {
  return absl::DataLossError(
      "the store's fence counter (table idem_fence) has no row; restore it from a backup or "
      "insert (1, the highest fence ever stored) before claiming keys again");
}

}  // namespace

bool TransactionClaims::NamesKeyTables(std::string_view sql) {
  constexpr std::string_view kPrefix = "idem_";
  const auto lower_equal = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == b;
  };
  for (auto it = sql.begin();; it += kPrefix.size()) {
    it = std::search(it, sql.end(), kPrefix.begin(), kPrefix.end(), lower_equal);
    if (it == sql.end()) return false;
    const std::string_view rest(it + kPrefix.size(), sql.end());
    for (std::string_view table : {std::string_view("keys"), std::string_view("fence")}) {
      if (rest.size() >= table.size() &&
          std::equal(rest.begin(), rest.begin() + table.size(), table.begin(), lower_equal)) {
        return true;
      }
    }
  }
}

TransactionClaims::Entry* TransactionClaims::Unfinished(const Scope& scope) {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->finished_at == 0 && it->record.scope == scope) return &*it;
  }
  return nullptr;
}

void TransactionClaims::NoteFence(int64_t fence) { next_fence_ = std::max(next_fence_, fence + 1); }

absl::Status TransactionClaims::Write(Connection& conn, Entry& entry) {
  const KeyRecord& claim = entry.record;
  const ClaimParams params{claim.scope,      claim.fingerprint,    claim.owner,
                           claim.created_ms, claim.lease_until_ms, claim.expires_ms};
  IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> inserted, InsertClaim(conn, params, claim.fence));
  if (!inserted.has_value()) {
    return absl::InternalError(fmt::format(
        "key '{}' of tenant '{}', claimed in this transaction, was written by the transaction's "
        "own SQL before its claim was; leave idem_keys to the store",
        claim.scope.key, claim.scope.tenant));
  }
  entry.written_at = ++clock_;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ClaimResult>> TransactionClaims::ClaimNewKey(Connection& conn,
                                                                          const ClaimParams& p) {
  if (const Entry* held = Unfinished(p.scope); held != nullptr && held->written_at == 0) {
    return ClaimResult{false, held->record};  // a nested claim of this transaction's own
  }
  // Deferring: whether the key has a record, and the counter's next value, in one statement.
  // Otherwise the INSERT itself says whether the key had a record.
  IDEM_ASSIGN_OR_RETURN(
      Statement stmt,
      conn.Prepare(deferring_ ? "SELECT last + 1, EXISTS (SELECT 1 FROM idem_keys WHERE "
                                "tenant = ?1 AND key = ?2) FROM idem_fence"
                              : "SELECT last + 1, 0 FROM idem_fence"));
  if (deferring_) {
    IDEM_RETURN_IF_ERROR(stmt.BindText(1, p.scope.tenant));
    IDEM_RETURN_IF_ERROR(stmt.BindText(2, p.scope.key));
  }
  IDEM_ASSIGN_OR_RETURN(bool has_row, stmt.Step());
  if (!has_row) return MissingCounter();
  const int64_t fence = std::max(stmt.ColumnInt(0), next_fence_);
  const bool has_record = stmt.ColumnInt(1) != 0;
  IDEM_RETURN_IF_ERROR(stmt.Step().status());
  if (has_record) return std::nullopt;
  Entry entry{.record = KeyRecord{.scope = p.scope,
                                  .fingerprint = std::string(p.fingerprint),
                                  .state = KeyState::kInProgress,
                                  .fence = fence,
                                  .owner = std::string(p.owner),
                                  .lease_until_ms = p.lease_until_ms,
                                  .created_ms = p.now_ms,
                                  .updated_ms = p.now_ms,
                                  .expires_ms = p.expires_ms},
              .claimed_at = ++clock_,
              .written_at = 0,
              .finished_at = 0};
  if (!deferring_) {
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> inserted, InsertClaim(conn, p, fence));
    if (!inserted.has_value()) return std::nullopt;  // the key has a record
    entry.written_at = ++clock_;
  }
  next_fence_ = fence + 1;
  entries_.push_back(entry);
  return ClaimResult{true, std::move(entry.record)};
}

absl::StatusOr<std::optional<int64_t>> TransactionClaims::Finish(
    Connection& conn, const Scope& scope, int64_t fence, KeyState state,
    const StoredResponse& response, int64_t now_ms, int64_t expires_ms) {
  Entry* entry = Unfinished(scope);
  if (entry == nullptr) return std::nullopt;
  if (entry->written_at != 0) {
    IDEM_ASSIGN_OR_RETURN(
        int64_t changed,
        RecordOutcome(conn, scope, fence, state, response, now_ms, expires_ms));
    if (changed == 1) entry->finished_at = ++clock_;
    return changed;
  }
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
  entry->written_at = entry->finished_at = ++clock_;
  return int64_t{1};
}

absl::Status TransactionClaims::Flush(Connection& conn) {
  deferring_ = false;
  for (Entry& entry : entries_) {
    if (entry.written_at == 0 && entry.finished_at == 0) IDEM_RETURN_IF_ERROR(Write(conn, entry));
  }
  return absl::OkStatus();
}

absl::Status TransactionClaims::BeforeCommit(Connection& conn) {
  IDEM_RETURN_IF_ERROR(Flush(conn));
  int64_t highest = 0;
  for (const Entry& entry : entries_) {
    if (entry.finished_at == 0 || count_every_fence_) highest = std::max(highest, entry.record.fence);
  }
  return highest > 0 ? UseFence(conn, highest) : absl::OkStatus();
}

void TransactionClaims::OnSavepoint(std::string_view name) {
  savepoints_.push_back(Mark{std::string(name), ++clock_});
}

absl::Status TransactionClaims::OnRollbackTo(Connection& conn, std::string_view name) {
  // SQLite rolls back to the innermost savepoint of that name and keeps it open.
  auto mark = std::find_if(savepoints_.rbegin(), savepoints_.rend(),
                           [name](const Mark& m) { return SameSavepoint(m.name, name); });
  if (mark == savepoints_.rend()) {
    // Not one the store saw taken (through the native handle): what it undid is unknown.
    OnUnfollowedRollback();
    return absl::OkStatus();
  }
  const uint64_t at = mark->at;
  savepoints_.erase(mark.base(), savepoints_.end());
  std::erase_if(entries_, [at](const Entry& entry) { return entry.claimed_at > at; });
  for (Entry& entry : entries_) {
    if (entry.finished_at > at) entry.finished_at = 0;
    if (entry.written_at > at) entry.written_at = 0;
  }
  // No longer deferring: SQL may read idem_keys again, so the rows the rollback took come back.
  return deferring_ ? absl::OkStatus() : Flush(conn);
}

void TransactionClaims::OnRelease(std::string_view name) {
  auto mark = std::find_if(savepoints_.rbegin(), savepoints_.rend(),
                           [name](const Mark& m) { return SameSavepoint(m.name, name); });
  if (mark != savepoints_.rend()) savepoints_.erase(std::prev(mark.base()), savepoints_.end());
}

void TransactionClaims::OnUnfollowedRollback() { count_every_fence_ = true; }

}  // namespace idem::sqlite
