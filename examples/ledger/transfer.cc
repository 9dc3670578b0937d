#include "transfer.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <boost/json.hpp>
#include <exception>
#include <system_error>
#include <utility>

#include "idem/canonical_json.h"
#include "idem/key.h"

namespace idem::ledger {
namespace {

constexpr std::array<std::string_view, 4> kFields = {"key", "from", "to", "amount"};

absl::Status CheckAccount(std::string_view field, std::string_view account) {
  if (account.empty()) {
    return absl::InvalidArgumentError(fmt::format("field '{}' is empty: name an account", field));
  }
  if (account.size() > kMaxAccountBytes) {
    return absl::InvalidArgumentError(
        fmt::format("field '{}' is {} bytes long: an account name has at most {} bytes", field,
                    account.size(), kMaxAccountBytes));
  }
  for (unsigned char c : account) {
    if (c < 0x20 || c == 0x7f) {
      return absl::InvalidArgumentError(
          fmt::format("field '{}' contains a control character: remove it", field));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> StringField(const boost::json::object& object, std::string_view field) {
  const boost::json::value* value = object.if_contains(field);
  if (value == nullptr) {
    return absl::InvalidArgumentError(
        fmt::format("field '{}' is missing: a transfer has key, from, to and amount", field));
  }
  const boost::json::string* text = value->if_string();
  if (text == nullptr) {
    return absl::InvalidArgumentError(fmt::format("field '{}' must be a JSON string", field));
  }
  return std::string(text->data(), text->size());
}

absl::StatusOr<int64_t> AmountField(const boost::json::object& object) {
  const boost::json::value* value = object.if_contains("amount");
  if (value == nullptr) {
    return absl::InvalidArgumentError(
        "field 'amount' is missing: a transfer has key, from, to and amount");
  }
  const std::string range = fmt::format("an integer from 1 to {}", kMaxAmount);
  if (value->is_uint64()) {  // only numbers above INT64_MAX are parsed as uint64
    return absl::InvalidArgumentError(fmt::format("field 'amount' is too large: use {}", range));
  }
  if (!value->is_int64()) {
    return absl::InvalidArgumentError(
        fmt::format("field 'amount' must be {} (no fraction, exponent or quotes)", range));
  }
  const int64_t amount = value->get_int64();
  if (amount < 1 || amount > kMaxAmount) {
    return absl::InvalidArgumentError(fmt::format("field 'amount' is {}: use {}", amount, range));
  }
  return amount;
}

// Boost.JSON keeps the last of two members with one name; a transfer must not depend on which.
// idem's canonical JSON refuses duplicate names (and the fingerprint of such a line would fall
// back to its raw bytes). Returns InvalidArgument naming the field given twice.
absl::Status CheckNoFieldTwice(std::string_view line) {
  absl::StatusOr<std::string> canonical = CanonicalizeJson(line);
  if (canonical.ok()) return absl::OkStatus();
  const std::string why(canonical.status().message());
  if (why.find("twice") == std::string::npos) return absl::OkStatus();
  for (std::string_view field : kFields) {
    if (why.find(fmt::format("\"{}\"", field)) != std::string::npos) {
      return absl::InvalidArgumentError(fmt::format(
          "field '{}' is given twice: give each field once (which one would count is not defined)",
          field));
    }
  }
  return absl::InvalidArgumentError(fmt::format("{}", why));
}

absl::StatusOr<boost::json::object> ParseObject(std::string_view line) {
  if (line.starts_with("\xEF\xBB\xBF")) {
    return absl::InvalidArgumentError(
        "the line starts with a UTF-8 byte-order mark (EF BB BF): save the file as UTF-8 without "
        "a byte-order mark");
  }
  std::error_code ec;
  boost::json::value value;
  try {
    value = boost::json::parse(boost::json::string_view(line.data(), line.size()), ec);
  } catch (const std::exception& e) {  // allocation failures only; parse errors go to `ec`
    return absl::ResourceExhaustedError(fmt::format("cannot parse the line: {}", e.what()));
  }
  if (ec) {
    return absl::InvalidArgumentError(
        fmt::format("not valid JSON ({}): write one JSON object per line", ec.message()));
  }
  boost::json::object* object = value.if_object();
  if (object == nullptr) {
    return absl::InvalidArgumentError(
        "not a JSON object: write {\"key\": ..., \"from\": ..., \"to\": ..., \"amount\": ...}");
  }
  for (const auto& member : *object) {
    const std::string_view name(member.key().data(), member.key().size());
    if (std::find(kFields.begin(), kFields.end(), name) == kFields.end()) {
      return absl::InvalidArgumentError(
          fmt::format("unknown field '{}': a transfer has only key, from, to and amount", name));
    }
  }
  if (absl::Status once = CheckNoFieldTwice(line); !once.ok()) return once;
  return std::move(*object);
}

}  // namespace

absl::StatusOr<Transfer> ParseTransfer(std::string_view line) {
  auto object = ParseObject(line);
  if (!object.ok()) return object.status();
  Transfer transfer;
  for (auto [field, target] : {std::pair{"key", &transfer.key}, std::pair{"from", &transfer.from},
                               std::pair{"to", &transfer.to}}) {
    auto text = StringField(*object, field);
    if (!text.ok()) return text.status();
    *target = *std::move(text);
  }
  if (absl::Status key = ValidateKey(transfer.key); !key.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("field 'key' is not a valid idempotency key: {}", std::string(key.message())));
  }
  for (auto [field, account] : {std::pair{"from", &transfer.from}, std::pair{"to", &transfer.to}}) {
    if (absl::Status status = CheckAccount(field, *account); !status.ok()) return status;
  }
  if (transfer.from == transfer.to) {
    return absl::InvalidArgumentError(
        fmt::format("'from' and 'to' are both '{}': a transfer moves money between two accounts",
                    transfer.from));
  }
  auto amount = AmountField(*object);
  if (!amount.ok()) return amount.status();
  transfer.amount = *amount;
  return transfer;
}

std::string FormatTransfer(const Transfer& transfer) {
  boost::json::object object;
  object["key"] = transfer.key;
  object["from"] = transfer.from;
  object["to"] = transfer.to;
  object["amount"] = transfer.amount;
  return boost::json::serialize(object);
}

}  // namespace idem::ledger
