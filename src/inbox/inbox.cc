// The inbox (idem/inbox.h): an INSERT ... ON CONFLICT DO NOTHING into idem_inbox, whose primary
// key (source, message_id) is the lock, in the consumer's transaction.
#include "idem/inbox.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem {
namespace {

absl::Status ValidateId(std::string_view value, std::string_view what) {
  if (value.empty() || value.size() > kMaxInboxIdLength ||
      !std::all_of(value.begin(), value.end(), [](char c) { return c >= 0x21 && c <= 0x7E; })) {
    return absl::InvalidArgumentError(fmt::format(
        "inbox {} must be 1-{} visible ASCII characters (0x21-0x7E)", what, kMaxInboxIdLength));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> ConsumeOnce(Transaction& tx, std::string_view source,
                                 std::string_view message_id, const Clock& clock) {
  if (absl::Status s = ValidateId(source, "source"); !s.ok()) return s;
  if (absl::Status s = ValidateId(message_id, "message id"); !s.ok()) return s;
  const SqlValue params[] = {std::string(source), std::string(message_id), clock.NowMillis()};
  absl::StatusOr<int64_t> inserted = tx.Execute(
      "INSERT INTO idem_inbox (source, message_id, received_ms) VALUES ($1, $2, $3) "
      "ON CONFLICT (source, message_id) DO NOTHING",
      params);
  if (!inserted.ok()) return inserted.status();
  return *inserted == 1;
}

absl::StatusOr<int64_t> ForgetInboxBefore(Store& store, int64_t received_before_ms,
                                          int64_t max_rows) {
  if (max_rows < 1) return absl::InvalidArgumentError("max_rows must be 1 or more");
  absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store.Begin();
  if (!tx.ok()) return tx.status();
  const SqlValue params[] = {received_before_ms, max_rows};
  absl::StatusOr<int64_t> deleted = (*tx)->Execute(
      "DELETE FROM idem_inbox WHERE (source, message_id) IN (SELECT source, message_id FROM "
      "idem_inbox WHERE received_ms < $1 ORDER BY received_ms LIMIT $2)",
      params);
  if (!deleted.ok()) {
    (void)(*tx)->Rollback();
    return deleted.status();
  }
  if (absl::Status committed = (*tx)->Commit(); !committed.ok()) return committed;
  return *deleted;
}

}  // namespace idem
