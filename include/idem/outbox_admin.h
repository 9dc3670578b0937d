// idem/outbox_admin.h: the outbox's messages seen and repaired by a person (`idem outbox`,
// docs/outbox.md): list, show, re-drive dead messages, purge.
//
// Each call runs in a transaction of its own on the given store (opened by OpenStore, SQLite or
// PostgreSQL, with schema migration 3).
//
// Thread-safety: the functions are safe to call from many threads at once.
#ifndef IDEM_OUTBOX_ADMIN_H_
#define IDEM_OUTBOX_ADMIN_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/record.h"
#include "idem/store.h"

namespace idem {

// persisted (as the text of OutboxStateName): never rename.
enum class OutboxState {
  kPending,  // waiting to be sent, due at next_attempt_ms
  kSent,     // acknowledged by the sink; deleted after the relay's retention
  kDead,     // its attempts ran out (or the endpoint is gone); only a re-drive sends it again
};

// "pending", "sent", "dead".
std::string_view OutboxStateName(OutboxState state);
// The inverse of OutboxStateName. Errors: InvalidArgument naming the three names.
absl::StatusOr<OutboxState> ParseOutboxState(std::string_view name);

struct OutboxRecord {
  int64_t seq = 0;  // the order of messages within an aggregate
  std::string id;   // the UUIDv7 the message is published under
  std::string topic;
  std::string aggregate_key;
  std::vector<Header> headers;
  std::string payload;
  OutboxState state = OutboxState::kPending;
  int64_t attempts = 0;         // delivery attempts so far
  int64_t next_attempt_ms = 0;  // pending: not sent before this time
  std::string last_error;       // why the last attempt failed ("" if none did)
  int64_t created_ms = 0;
  int64_t sent_ms = 0;  // 0 unless sent
};

struct OutboxQuery {
  std::optional<OutboxState> state;  // default: every state
  std::string aggregate_key;         // default (""): every aggregate
  std::string topic;                 // default (""): every topic
  int64_t after_seq = 0;             // paging: only messages with seq > after_seq
  int64_t limit = 100;               // 1..10000
};

// Returns the messages `query` selects, in seq order, without their payloads (see
// GetOutboxMessage). Errors: InvalidArgument for a limit outside 1..10000 or a negative
// after_seq; Unavailable when the store is busy or down.
absl::StatusOr<std::vector<OutboxRecord>> ListOutbox(Store& store, const OutboxQuery& query);

// Returns the message with id `id`, payload included. Errors: InvalidArgument when `id` is not a
// UUID's text form; NotFound when no message has it; Unavailable.
absl::StatusOr<OutboxRecord> GetOutboxMessage(Store& store, std::string_view id);

// Which messages a re-drive or a purge touches: one message by id, or every message of a state
// (optionally of one aggregate only). Exactly one of `id` and `state` must be set.
struct OutboxSelection {
  std::string id;
  std::optional<OutboxState> state;
  std::string aggregate_key;  // with `state`: only this aggregate's messages ("" = all)
};

// Makes the selected dead messages pending again, due at `now_ms`, with their attempts reset, and
// returns how many it changed. Their aggregates' followers then wait for them again.
// Errors: InvalidArgument for a selection that is not one id or state dead; NotFound for an id
// that no message has; FailedPrecondition for an id whose message is not dead (nothing changes);
// Unavailable.
absl::StatusOr<int64_t> RedriveOutbox(Store& store, const OutboxSelection& selection,
                                      int64_t now_ms);

// Deletes the selected messages whatever their state and returns how many it deleted: a purged
// pending message is never sent (a relay publishing it right now may still send it once).
// Errors: InvalidArgument for a selection that is not one id or one state; NotFound for an id
// that no message has; Unavailable.
absl::StatusOr<int64_t> PurgeOutbox(Store& store, const OutboxSelection& selection);

// Counts of the outbox's messages per state (for metrics and `idem outbox list --count`).
struct OutboxCounts {
  int64_t pending = 0;
  int64_t sent = 0;
  int64_t dead = 0;
};
// Errors: Unavailable.
absl::StatusOr<OutboxCounts> CountOutbox(Store& store);

}  // namespace idem

#endif  // IDEM_OUTBOX_ADMIN_H_
