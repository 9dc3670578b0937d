// Reading outbox rows: the column list every SELECT of idem_outbox uses, and the row's decoding
// into an OutboxRecord, the same on SQLite and PostgreSQL.
//
// Thread-safety: stateless functions.
#ifndef IDEM_OUTBOX_OUTBOX_ROWS_H_
#define IDEM_OUTBOX_OUTBOX_ROWS_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "idem/outbox_admin.h"
#include "idem/transaction.h"

namespace idem::outbox {

// The columns DecodeRecord reads, in its order; kColumnsNoPayload selects '' for the payload.
inline constexpr std::string_view kColumns =
    "seq, id, topic, aggregate_key, headers, payload, state, attempts, next_attempt_ms, "
    "last_error, created_ms, sent_ms";
inline constexpr std::string_view kColumnsNoPayload =
    "seq, id, topic, aggregate_key, headers, NULL, state, attempts, next_attempt_ms, "
    "last_error, created_ms, sent_ms";

// Errors: DataLoss when the row does not hold what migration 3 stores.
absl::StatusOr<OutboxRecord> DecodeRecord(const SqlRow& row);

// Runs `work` in a transaction of its own on `store` and commits it.
// Errors: Begin's, the work's (then rolled back), Commit's.
template <typename Work>
auto InTransaction(Store& store, Work work) -> decltype(work(std::declval<StoreTransaction&>())) {
  auto tx = store.Begin();
  if (!tx.ok()) return tx.status();
  auto result = work(**tx);
  if (!result.ok()) {
    (void)(*tx)->Rollback();
    return result;
  }
  if (absl::Status status = (*tx)->Commit(); !status.ok()) return status;
  return result;
}

}  // namespace idem::outbox

#endif  // IDEM_OUTBOX_OUTBOX_ROWS_H_
