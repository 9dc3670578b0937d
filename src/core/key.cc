#include "idem/key.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "common/optional_whitespace.h"
#include "core/utf8.h"

namespace idem {
namespace {

bool IsVisibleAscii(unsigned char c) { return c >= 0x21 && c <= 0x7E; }

// RFC 8941 §3.3.4: tchar (RFC 9110) plus ':' and '/'.
bool IsStructuredTokenChar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~:/").find(static_cast<char>(c)) != std::string_view::npos;
}

absl::Status Invalid(const std::string& message) { return absl::InvalidArgumentError(message); }

// Describes a byte that is never allowed in a key, or returns an empty string.
std::string ForbiddenByte(unsigned char c, std::size_t position) {
  if (c < 0x20 || c == 0x7F) {
    return fmt::format(
        "Idempotency-Key has control character 0x{:02X} at position {}; send only "
        "visible ASCII characters",
        c, position);
  }
  if (c >= 0x80) {
    return fmt::format(
        "Idempotency-Key has non-ASCII byte 0x{:02X} at position {}; send only "
        "visible ASCII characters (0x21-0x7E)",
        c, position);
  }
  return {};
}

absl::Status CheckLength(std::size_t length) {
  if (length == 0)
    return Invalid("Idempotency-Key is empty; send 1 to 255 visible ASCII characters");
  if (length > kMaxKeyLength) {
    return Invalid(fmt::format("Idempotency-Key is {} characters long; the limit is {}", length,
                               kMaxKeyLength));
  }
  return absl::OkStatus();
}

// Rejects what may follow a complete item in `value` from `position` on: another list member,
// parameters, or anything else. Spaces before them are skipped (RFC 8941 allows them in lists).
absl::Status CheckTrailing(std::string_view value, std::size_t position) {
  position = std::min(value.find_first_not_of(' ', position), value.size());
  if (position == value.size()) return absl::OkStatus();
  if (value[position] == ',') {
    return Invalid(
        "Idempotency-Key holds a list (a ',' after the key, or the header sent twice); "
        "send exactly one key");
  }
  if (value[position] == ';') {
    return Invalid("Idempotency-Key has parameters (';' after the key); send the key alone");
  }
  return Invalid(fmt::format(
      "Idempotency-Key has unexpected character '{}' at position {} after the key; quote the "
      "whole key as \"...\"",
      value[position], position));
}

absl::StatusOr<std::string> ParseQuoted(std::string_view value) {
  std::string key;
  for (std::size_t i = 1; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (std::string message = ForbiddenByte(c, i); !message.empty()) return Invalid(message);
    if (c == '"') {
      absl::Status trailing = CheckTrailing(value, i + 1);
      if (!trailing.ok()) return trailing;
      absl::Status length = CheckLength(key.size());
      if (!length.ok()) return length;
      return key;
    }
    if (c == ' ') {
      return Invalid(
          fmt::format("Idempotency-Key has a space at position {}; keys are visible "
                      "ASCII characters without spaces",
                      i));
    }
    if (c == '\\') {
      if (i + 1 == value.size()) break;
      const char next = value[++i];
      if (next != '"' && next != '\\') {
        return Invalid(
            fmt::format("Idempotency-Key has an invalid escape at position {}; inside "
                        "a quoted key only \\\" and \\\\ may follow a backslash",
                        i - 1));
      }
      key.push_back(next);
      continue;
    }
    key.push_back(static_cast<char>(c));
  }
  return Invalid("Idempotency-Key has an unterminated quoted string; end it with '\"'");
}

absl::StatusOr<std::string> ParseBare(std::string_view value) {
  std::size_t end = 0;
  while (end < value.size()) {
    const auto c = static_cast<unsigned char>(value[end]);
    if (std::string message = ForbiddenByte(c, end); !message.empty()) return Invalid(message);
    if (!IsStructuredTokenChar(c)) break;
    ++end;
  }
  if (end < value.size() && value[end] == ' ') {
    // A space ends a token; only a list or parameters may follow it.
    const char next = value[value.find_first_not_of(' ', end)];
    if (next != ',' && next != ';') {
      return Invalid(fmt::format(
          "Idempotency-Key has a space at position {}; keys are visible ASCII characters "
          "without spaces",
          end));
    }
  }
  if (end == 0 && value[0] != ',' && value[0] != ';') {
    return Invalid(fmt::format(
        "Idempotency-Key starts with '{}', which a bare key cannot contain; quote the key as "
        "\"...\"",
        value[0]));
  }
  absl::Status trailing = CheckTrailing(value, end);
  if (!trailing.ok()) return trailing;
  absl::Status length = CheckLength(end);
  if (!length.ok()) return length;
  return std::string(value.substr(0, end));
}

absl::Status ValidateTenantText(std::string_view tenant) {
  if (std::size_t bad = core::FindInvalidUtf8(tenant); bad != std::string_view::npos) {
    return Invalid(fmt::format("tenant has invalid UTF-8 at byte {}; send UTF-8 text", bad));
  }
  for (std::size_t i = 0; i < tenant.size(); ++i) {
    const auto c = static_cast<unsigned char>(tenant[i]);
    if (c < 0x20 || c == 0x7F) {
      return Invalid(
          fmt::format("tenant has control character 0x{:02X} at byte {}; remove it", c, i));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ParseIdempotencyKey(std::string_view header_value) {
  const std::string_view value = TrimOptionalWhitespace(header_value);
  if (value.empty()) {
    return Invalid("Idempotency-Key is empty; send 1 to 255 visible ASCII characters");
  }
  if (value.front() == '"') return ParseQuoted(value);
  return ParseBare(value);
}

absl::Status ValidateKey(std::string_view key) {
  if (absl::Status length = CheckLength(key.size()); !length.ok()) return length;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (IsVisibleAscii(c)) continue;
    if (c == ' ') {
      return Invalid(
          fmt::format("Idempotency-Key has a space at position {}; keys are visible "
                      "ASCII characters without spaces",
                      i));
    }
    return Invalid(ForbiddenByte(c, i));
  }
  return absl::OkStatus();
}

absl::Status ValidateScope(const Scope& scope) {
  if (absl::Status key = ValidateKey(scope.key); !key.ok()) return key;
  if (scope.tenant.size() > kMaxTenantLength) {
    return Invalid(fmt::format("tenant is {} bytes long; the limit is {}", scope.tenant.size(),
                               kMaxTenantLength));
  }
  return ValidateTenantText(scope.tenant);
}

}  // namespace idem
