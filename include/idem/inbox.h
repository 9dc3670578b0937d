// idem/inbox.h: consume a message once, in the consumer's own transaction (DESIGN §4,
// docs/inbox.md).
//
// A relay delivers at least once, so a consumer sees some messages twice. ConsumeOnce records
// (source, message id) in the consumer's transaction, beside the message's effect:
//
//   auto first = ConsumeOnce(tx, "payments", webhook_id);
//   if (!first.ok()) return first.status();
//   if (*first) { ... apply the event through tx ... }   // a redelivery skips this
//   commit
//
// The effect and the record commit together or not at all: a redelivered message is skipped,
// one whose first consumption rolled back is applied when it comes again. `tx` is a transaction
// of an idem store (Store::Begin, or the guard's) or one the application began on its own
// connection and borrowed (idem/borrowed_transaction.h), which it then commits itself.
//
// Thread-safety: safe from many threads at once, each with its own Transaction.
#ifndef IDEM_INBOX_H_
#define IDEM_INBOX_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "idem/transaction.h"

namespace idem {

inline constexpr std::size_t kMaxInboxIdLength = 255;

// Records that message `message_id` from `source` is consumed in `tx`. Returns true when it was
// not consumed before (apply its effect in `tx`), false when a committed transaction already
// consumed it (skip it). On PostgreSQL a concurrent consumer of the same message waits for the
// first's transaction: false if it commits, true if it rolls back.
// Errors: InvalidArgument when `source` or `message_id` is not 1-255 visible ASCII characters
// (nothing written); otherwise the INSERT's error as Transaction::Query returns it, after which
// `tx` is good only for rolling back.
absl::StatusOr<bool> ConsumeOnce(Transaction& tx, std::string_view source,
                                 std::string_view message_id, const Clock& clock = SystemClock());

// Deletes up to `max_rows` inbox records received before `received_before_ms` and returns how
// many: a message redelivered after its record is gone is applied again, so keep records longer
// than any relay retries (its --max-attempts with --backoff-cap). Errors: InvalidArgument for
// max_rows < 1; Unavailable when the store is busy or down.
absl::StatusOr<int64_t> ForgetInboxBefore(Store& store, int64_t received_before_ms,
                                          int64_t max_rows = 1000);

}  // namespace idem

#endif  // IDEM_INBOX_H_
