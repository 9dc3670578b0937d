// idem/outbox.h: the transactional outbox's write side (docs/outbox.md, DESIGN §4).
//
// An effect run by the guard (idem/guard.h) adds messages through the Transaction it was handed,
// so a message exists exactly when the business change committed: a rolled-back effect leaves
// none, and a replayed key runs no effect, so it adds none. `idem relay` later publishes each
// message at least once, in order per aggregate key.
//
//   guard.Run(scope, fingerprint, [&](Transaction& tx) -> absl::StatusOr<StoredResponse> {
//     ... tx.Execute("INSERT INTO payments ...") ...
//     IDEM_ASSIGN_OR_RETURN(std::string id, AddOutboxMessage(tx, {.topic = "payment.created",
//                                                                 .aggregate_key = payment_id,
//                                                                 .payload = json}));
//     return StoredResponse{...};
//   });
//
// The store must have been opened by an idem with schema migration 3 (any idem that has this
// header does so at open), on SQLite or PostgreSQL.
//
// Thread-safety: the functions are safe to call from many threads at once, each with its own
// Transaction.
#ifndef IDEM_OUTBOX_H_
#define IDEM_OUTBOX_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/record.h"
#include "idem/transaction.h"

namespace idem {

// Limits of a message (checked before anything is written).
inline constexpr std::size_t kMaxOutboxTopicLength = 255;
inline constexpr std::size_t kMaxOutboxAggregateKeyLength = 255;
inline constexpr std::size_t kMaxOutboxHeaders = 64;
inline constexpr std::size_t kMaxOutboxPayloadBytes = 1024 * 1024;  // NATS's default max_payload

struct OutboxMessage {
  // What the message is about, e.g. "payment.created": 1–255 characters of letters, digits, '_'
  // and '-', in tokens separated by single '.' (a NATS subject token each; never '*' or '>').
  std::string topic;
  // Messages of one aggregate key are published in the order they were added; other aggregates
  // do not wait for them. 1–255 visible ASCII characters (0x21–0x7E), e.g. an order id.
  std::string aggregate_key;
  // Extra headers sent with the message. Names: HTTP token characters, at most 64 of them, not
  // one the relay sets itself (content-type, content-length, idempotency-key, webhook-*,
  // nats-*); values: visible ASCII, space and tab. Default: none.
  std::vector<Header> headers;
  // The message body, any bytes, at most kMaxOutboxPayloadBytes. The HTTP sink sends it as
  // application/json.
  std::string payload;
};

// Returns OK when `message` is within the rules above, else InvalidArgument naming the field.
absl::Status ValidateOutboxMessage(const OutboxMessage& message);

// Adds `message` to the outbox inside `tx` and returns its message id: a new UUID version 7 in
// its 36-character text form (idem/uuid.h), also the id the relay publishes it under
// (webhook-id, Idempotency-Key, Nats-Msg-Id). `clock` stamps its creation time.
// The message becomes visible to the relay only when `tx` commits; if `tx` rolls back (to a
// savepoint taken before this call, or whole), the message is gone with it.
// Errors: InvalidArgument for a message ValidateOutboxMessage refuses (nothing written);
// otherwise the INSERT's error as Transaction::Query returns it (InvalidArgument too when the
// store has no outbox table), after which `tx` is good only for rolling back.
absl::StatusOr<std::string> AddOutboxMessage(Transaction& tx, const OutboxMessage& message,
                                             const Clock& clock = SystemClock());

}  // namespace idem

#endif  // IDEM_OUTBOX_H_
