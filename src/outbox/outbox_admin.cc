// The outbox for operators (idem/outbox_admin.h): portable SQL over Store::Begin's transactions.
#include "idem/outbox_admin.h"

#include <fmt/format.h>

#include "common/status_macros.h"
#include "idem/uuid.h"
#include "outbox/outbox_rows.h"

namespace idem {
namespace {

constexpr int64_t kMaxListLimit = 10000;

absl::Status CheckSelection(const OutboxSelection& selection, std::string_view what) {
  if (selection.id.empty() == !selection.state.has_value()) {
    return absl::InvalidArgumentError(
        fmt::format("{} needs exactly one of a message id and a state", what));
  }
  if (!selection.id.empty()) return ParseUuid(selection.id).status();
  if (!selection.aggregate_key.empty() && selection.aggregate_key.size() > 255) {
    return absl::InvalidArgumentError("aggregate key is longer than 255 characters");
  }
  return absl::OkStatus();
}

// The state of message `id`. Errors: NotFound.
absl::StatusOr<OutboxState> StateOf(Transaction& tx, const std::string& id) {
  const SqlValue params[] = {id};
  IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                        tx.Query("SELECT state FROM idem_outbox WHERE id = $1", params));
  if (rows.empty()) return absl::NotFoundError(fmt::format("no outbox message has id {}", id));
  const auto* state = std::get_if<std::string>(&rows[0][0]);
  if (state == nullptr) return absl::DataLossError("outbox row state is not text");
  return ParseOutboxState(*state);
}

}  // namespace

std::string_view OutboxStateName(OutboxState state) {
  switch (state) {
    case OutboxState::kPending:
      return "pending";
    case OutboxState::kSent:
      return "sent";
    case OutboxState::kDead:
      return "dead";
  }
  return "unknown";
}

absl::StatusOr<OutboxState> ParseOutboxState(std::string_view name) {
  for (OutboxState state : {OutboxState::kPending, OutboxState::kSent, OutboxState::kDead}) {
    if (name == OutboxStateName(state)) return state;
  }
  return absl::InvalidArgumentError(
      fmt::format("unknown outbox state \"{}\"; expected pending, sent or dead", name));
}

absl::StatusOr<std::vector<OutboxRecord>> ListOutbox(Store& store, const OutboxQuery& query) {
  if (query.limit < 1 || query.limit > kMaxListLimit) {
    return absl::InvalidArgumentError(
        fmt::format("limit {} is outside 1..{}", query.limit, kMaxListLimit));
  }
  if (query.after_seq < 0) return absl::InvalidArgumentError("after_seq must not be negative");
  const std::string state = query.state ? std::string(OutboxStateName(*query.state)) : "";
  const SqlValue params[] = {query.after_seq, state, query.aggregate_key, query.topic, query.limit};
  const std::string sql = fmt::format(
      "SELECT {} FROM idem_outbox WHERE seq > $1 AND ($2 = '' OR state = $2) AND "
      "($3 = '' OR aggregate_key = $3) AND ($4 = '' OR topic = $4) ORDER BY seq LIMIT $5",
      outbox::kColumnsNoPayload);
  return outbox::InTransaction(
      store, [&](StoreTransaction& tx) -> absl::StatusOr<std::vector<OutboxRecord>> {
        IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows, tx.Query(sql, params));
        std::vector<OutboxRecord> records;
        records.reserve(rows.size());
        for (const SqlRow& row : rows) {
          IDEM_ASSIGN_OR_RETURN(OutboxRecord record, outbox::DecodeRecord(row));
          records.push_back(std::move(record));
        }
        return records;
      });
}

absl::StatusOr<OutboxRecord> GetOutboxMessage(Store& store, std::string_view id) {
  IDEM_RETURN_IF_ERROR(ParseUuid(id).status());
  const SqlValue params[] = {std::string(id)};
  const std::string sql = fmt::format("SELECT {} FROM idem_outbox WHERE id = $1", outbox::kColumns);
  return outbox::InTransaction(store, [&](StoreTransaction& tx) -> absl::StatusOr<OutboxRecord> {
    IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows, tx.Query(sql, params));
    if (rows.empty()) return absl::NotFoundError(fmt::format("no outbox message has id {}", id));
    return outbox::DecodeRecord(rows[0]);
  });
}

absl::StatusOr<int64_t> RedriveOutbox(Store& store, const OutboxSelection& selection,
                                      int64_t now_ms) {
  IDEM_RETURN_IF_ERROR(CheckSelection(selection, "a re-drive"));
  if (selection.state && *selection.state != OutboxState::kDead) {
    return absl::InvalidArgumentError("only dead messages can be re-driven");
  }
  return outbox::InTransaction(store, [&](StoreTransaction& tx) -> absl::StatusOr<int64_t> {
    if (!selection.id.empty()) {
      IDEM_ASSIGN_OR_RETURN(OutboxState state, StateOf(tx, selection.id));
      if (state != OutboxState::kDead) {
        return absl::FailedPreconditionError(
            fmt::format("outbox message {} is {}, not dead: only a dead message is re-driven",
                        selection.id, OutboxStateName(state)));
      }
    }
    const SqlValue params[] = {now_ms, selection.id, selection.aggregate_key};
    return tx.Execute(
        "UPDATE idem_outbox SET state = 'pending', attempts = 0, next_attempt_ms = $1, "
        "last_error = '' WHERE state = 'dead' AND ($2 = '' OR id = $2) AND "
        "($3 = '' OR aggregate_key = $3)",
        params);
  });
}

absl::StatusOr<int64_t> PurgeOutbox(Store& store, const OutboxSelection& selection) {
  IDEM_RETURN_IF_ERROR(CheckSelection(selection, "a purge"));
  const std::string state = selection.state ? std::string(OutboxStateName(*selection.state)) : "";
  const SqlValue params[] = {selection.id, state, selection.aggregate_key};
  return outbox::InTransaction(store, [&](StoreTransaction& tx) -> absl::StatusOr<int64_t> {
    IDEM_ASSIGN_OR_RETURN(int64_t deleted,
                          tx.Execute("DELETE FROM idem_outbox WHERE ($1 = '' OR id = $1) AND "
                                     "($2 = '' OR state = $2) AND ($3 = '' OR aggregate_key = $3)",
                                     params));
    if (deleted == 0 && !selection.id.empty()) {
      return absl::NotFoundError(fmt::format("no outbox message has id {}", selection.id));
    }
    return deleted;
  });
}

absl::StatusOr<OutboxCounts> CountOutbox(Store& store) {
  return outbox::InTransaction(store, [&](StoreTransaction& tx) -> absl::StatusOr<OutboxCounts> {
    IDEM_ASSIGN_OR_RETURN(std::vector<SqlRow> rows,
                          tx.Query("SELECT state, count(*) FROM idem_outbox GROUP BY state"));
    OutboxCounts counts;
    for (const SqlRow& row : rows) {
      // The size check also lets GCC 12 at -O2 see that row[1] exists (it otherwise warns of a
      // null dereference inside std::get_if).
      if (row.size() != 2) return absl::DataLossError("outbox count row");
      const auto* state = std::get_if<std::string>(&row.front());
      const auto* count = std::get_if<int64_t>(&row.back());
      if (state == nullptr || count == nullptr) return absl::DataLossError("outbox count row");
      if (*state == "pending") counts.pending = *count;
      if (*state == "sent") counts.sent = *count;
      if (*state == "dead") counts.dead = *count;
    }
    return counts;
  });
}

}  // namespace idem
