#include "outbox/outbox_rows.h"

#include <fmt/format.h>

#include "common/status_macros.h"
#include "outbox/outbox_headers.h"

namespace idem::outbox {
namespace {

absl::StatusOr<int64_t> IntAt(const SqlRow& row, size_t i) {
  if (const auto* value = std::get_if<int64_t>(&row[i])) return *value;
  return absl::DataLossError(fmt::format("outbox row: column {} is not an integer", i));
}

absl::StatusOr<std::string> TextAt(const SqlRow& row, size_t i) {
  if (const auto* value = std::get_if<std::string>(&row[i])) return *value;
  if (const auto* blob = std::get_if<Blob>(&row[i])) return blob->bytes;
  if (std::holds_alternative<std::monostate>(row[i])) return std::string();
  return absl::DataLossError(fmt::format("outbox row: column {} is not text", i));
}

}  // namespace

absl::StatusOr<OutboxRecord> DecodeRecord(const SqlRow& row) {
  if (row.size() != 12) {
    return absl::DataLossError(fmt::format("outbox row has {} columns; expected 12", row.size()));
  }
  OutboxRecord record;
  IDEM_ASSIGN_OR_RETURN(record.seq, IntAt(row, 0));
  IDEM_ASSIGN_OR_RETURN(record.id, TextAt(row, 1));
  IDEM_ASSIGN_OR_RETURN(record.topic, TextAt(row, 2));
  IDEM_ASSIGN_OR_RETURN(record.aggregate_key, TextAt(row, 3));
  IDEM_ASSIGN_OR_RETURN(const std::string headers, TextAt(row, 4));
  IDEM_ASSIGN_OR_RETURN(record.headers, DecodeHeaders(headers));
  IDEM_ASSIGN_OR_RETURN(record.payload, TextAt(row, 5));
  IDEM_ASSIGN_OR_RETURN(const std::string state, TextAt(row, 6));
  absl::StatusOr<OutboxState> parsed = ParseOutboxState(state);
  if (!parsed.ok()) return absl::DataLossError(fmt::format("outbox row state \"{}\"", state));
  record.state = *parsed;
  IDEM_ASSIGN_OR_RETURN(record.attempts, IntAt(row, 7));
  IDEM_ASSIGN_OR_RETURN(record.next_attempt_ms, IntAt(row, 8));
  IDEM_ASSIGN_OR_RETURN(record.last_error, TextAt(row, 9));
  IDEM_ASSIGN_OR_RETURN(record.created_ms, IntAt(row, 10));
  IDEM_ASSIGN_OR_RETURN(record.sent_ms, IntAt(row, 11));
  return record;
}

}  // namespace idem::outbox
