// How `idem outbox` prints outbox messages: one line per message for people, or JSON for scripts
// (a contract: docs/outbox.md; never rename a field).
//
// Thread-safety: pure functions.
#ifndef IDEM_CLI_OUTBOX_FORMAT_H_
#define IDEM_CLI_OUTBOX_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "idem/outbox_admin.h"

namespace idem::cli {

// "SEQ  ID  STATE  ATTEMPTS  AGE  AGGREGATE  TOPIC  LAST-ERROR" columns, a header line first;
// ages count from `now_ms`.
std::string FormatOutboxTable(const std::vector<OutboxRecord>& records, int64_t now_ms);

// Every field of one message, one "name: value" line each, then its headers and payload (as is
// when it is UTF-8 text, else its size).
std::string FormatOutboxDetail(const OutboxRecord& record, int64_t now_ms);

// One JSON object per message: seq, id, topic, aggregate_key, state, attempts, next_attempt_ms,
// last_error, created_ms, sent_ms, headers [[name, value]...], and (with `with_payload`) payload
// (UTF-8 text) or payload_base64.
std::string OutboxRecordJson(const OutboxRecord& record, bool with_payload);

}  // namespace idem::cli

#endif  // IDEM_CLI_OUTBOX_FORMAT_H_
