// The outbox's write side (idem/outbox.h): validation and the INSERT in the caller's transaction.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "common/status_macros.h"
#include "idem/outbox.h"
#include "idem/uuid.h"
#include "outbox/outbox_headers.h"

namespace idem {
namespace {

bool IsTopicChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '-';
}

bool IsTokenChar(char c) {
  static constexpr std::string_view kExtra = "!#$%&'*+-.^_`|~";
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || kExtra.find(c) != kExtra.npos;
}

bool IsVisibleAscii(char c) { return c >= 0x21 && c <= 0x7E; }

absl::Status ValidateTopic(std::string_view topic) {
  if (topic.empty() || topic.size() > kMaxOutboxTopicLength) {
    return absl::InvalidArgumentError(fmt::format("outbox topic must be 1-{} characters; got {}",
                                                  kMaxOutboxTopicLength, topic.size()));
  }
  if (topic.front() == '.' || topic.back() == '.' || topic.find("..") != topic.npos) {
    return absl::InvalidArgumentError(fmt::format(
        "outbox topic \"{}\" has an empty token: dots separate non-empty tokens", topic));
  }
  for (char c : topic) {
    if (c != '.' && !IsTopicChar(c)) {
      return absl::InvalidArgumentError(fmt::format(
          "outbox topic \"{}\" has character 0x{:02x}; allowed: letters, digits, '_', '-', '.'",
          topic, static_cast<unsigned char>(c)));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAggregateKey(std::string_view key) {
  if (key.empty() || key.size() > kMaxOutboxAggregateKeyLength) {
    return absl::InvalidArgumentError(
        fmt::format("outbox aggregate key must be 1-{} characters; got {}",
                    kMaxOutboxAggregateKeyLength, key.size()));
  }
  if (!std::all_of(key.begin(), key.end(), IsVisibleAscii)) {
    return absl::InvalidArgumentError(
        "outbox aggregate key must be visible ASCII characters (0x21-0x7E)");
  }
  return absl::OkStatus();
}

bool IsReservedHeader(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static constexpr std::array<std::string_view, 3> kExact = {"content-type", "content-length",
                                                             "idempotency-key"};
  if (std::find(kExact.begin(), kExact.end(), lower) != kExact.end()) return true;
  return lower.starts_with("webhook-") || lower.starts_with("nats-");
}

absl::Status ValidateHeader(const Header& header) {
  if (header.name.empty() || !std::all_of(header.name.begin(), header.name.end(), IsTokenChar)) {
    return absl::InvalidArgumentError(fmt::format(
        "outbox header name \"{}\" must be 1 or more HTTP token characters", header.name));
  }
  if (IsReservedHeader(header.name)) {
    return absl::InvalidArgumentError(fmt::format(
        "outbox header \"{}\" is set by the relay itself and cannot be given", header.name));
  }
  for (char c : header.value) {
    if (!IsVisibleAscii(c) && c != ' ' && c != '\t') {
      return absl::InvalidArgumentError(fmt::format(
          "outbox header \"{}\" has character 0x{:02x} in its value; allowed: visible ASCII, "
          "space, tab",
          header.name, static_cast<unsigned char>(c)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateOutboxMessage(const OutboxMessage& message) {
  IDEM_RETURN_IF_ERROR(ValidateTopic(message.topic));
  IDEM_RETURN_IF_ERROR(ValidateAggregateKey(message.aggregate_key));
  if (message.headers.size() > kMaxOutboxHeaders) {
    return absl::InvalidArgumentError(fmt::format("outbox message has {} headers; at most {}",
                                                  message.headers.size(), kMaxOutboxHeaders));
  }
  for (const Header& header : message.headers) IDEM_RETURN_IF_ERROR(ValidateHeader(header));
  if (message.payload.size() > kMaxOutboxPayloadBytes) {
    return absl::InvalidArgumentError(fmt::format("outbox payload has {} bytes; at most {}",
                                                  message.payload.size(), kMaxOutboxPayloadBytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> AddOutboxMessage(Transaction& tx, const OutboxMessage& message,
                                             const Clock& clock) {
  IDEM_RETURN_IF_ERROR(ValidateOutboxMessage(message));
  std::string id = NewUuidV7();
  const int64_t now = clock.NowMillis();
  const SqlValue params[] = {id,
                             message.topic,
                             message.aggregate_key,
                             outbox::EncodeHeaders(message.headers),
                             Blob{message.payload},
                             now};
  IDEM_RETURN_IF_ERROR(tx.Execute("INSERT INTO idem_outbox (id, topic, aggregate_key, headers, "
                                  "payload, created_ms, next_attempt_ms) "
                                  "VALUES ($1, $2, $3, $4, $5, $6, $6)",
                                  params)
                           .status());
  return id;
}

}  // namespace idem
