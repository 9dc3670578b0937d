#include "idem/webhook_signature.h"

#include <fmt/format.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <charconv>
#include <cstdlib>
#include <optional>

#include "core/base64.h"

namespace idem {
namespace {

constexpr std::string_view kSecretPrefix = "whsec_";
constexpr size_t kMinKeyBytes = 16;
constexpr size_t kMaxKeyBytes = 128;

bool IsBase64Char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' ||
         c == '/';
}

// Standard base64 with optional padding. Returns nothing on any other character.
std::optional<std::string> DecodeBase64(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  for (char c : text) {
    if (!IsBase64Char(c)) return std::nullopt;
  }
  if (text.size() % 4 == 1) return std::nullopt;
  std::string padded(text);
  padded.append((4 - padded.size() % 4) % 4, '=');
  std::string out(padded.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(padded.data()),
                                static_cast<int>(padded.size()));
  if (n < 0) return std::nullopt;
  out.resize(static_cast<size_t>(n) - (padded.size() - text.size()));  // padding decodes as 0s
  return out;
}

std::string Mac(std::string_view key, std::string_view id, std::string_view timestamp,
                std::string_view body) {
  std::string content = fmt::format("{}.{}.", id, timestamp);
  content.append(body);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(content.data()), content.size(), digest, &length);
  return std::string(reinterpret_cast<const char*>(digest), length);
}

}  // namespace

absl::StatusOr<std::string> DecodeWebhookSecret(std::string_view secret) {
  if (!secret.starts_with(kSecretPrefix)) {
    return absl::InvalidArgumentError(
        "the webhook secret must start with \"whsec_\" followed by the key in base64");
  }
  std::optional<std::string> key = DecodeBase64(secret.substr(kSecretPrefix.size()));
  if (!key) {
    return absl::InvalidArgumentError(
        "the webhook secret after \"whsec_\" is not base64 (A-Z a-z 0-9 + /, '=' padding)");
  }
  if (key->size() < kMinKeyBytes || key->size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        fmt::format("the webhook secret's key has {} bytes; it must have {} to {}", key->size(),
                    kMinKeyBytes, kMaxKeyBytes));
  }
  return *key;
}

std::string SignWebhook(std::string_view key, std::string_view id, int64_t timestamp_seconds,
                        std::string_view body) {
  return "v1," + core::EncodeBase64(Mac(key, id, std::to_string(timestamp_seconds), body));
}

absl::Status VerifyWebhook(std::string_view key, std::string_view id, std::string_view timestamp,
                           std::string_view signature_header, std::string_view body,
                           int64_t now_seconds, int64_t tolerance_seconds) {
  if (id.empty()) return absl::InvalidArgumentError("the webhook-id header is missing");
  int64_t sent = 0;
  const auto [end, error] =
      std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), sent);
  if (timestamp.empty() || error != std::errc() || end != timestamp.data() + timestamp.size()) {
    return absl::InvalidArgumentError(fmt::format(
        "the webhook-timestamp header \"{}\" is not unix seconds", timestamp.substr(0, 32)));
  }
  if (std::llabs(now_seconds - sent) > tolerance_seconds) {
    return absl::UnauthenticatedError(
        fmt::format("the webhook-timestamp {} is {} s away from now; at most {} s is accepted",
                    sent, std::llabs(now_seconds - sent), tolerance_seconds));
  }
  const std::string expected = Mac(key, id, timestamp, body);
  bool any_v1 = false;
  while (!signature_header.empty()) {
    const size_t space = signature_header.find(' ');
    std::string_view one = signature_header.substr(0, space);
    signature_header = space == std::string_view::npos ? "" : signature_header.substr(space + 1);
    if (!one.starts_with("v1,")) continue;
    any_v1 = true;
    std::optional<std::string> got = DecodeBase64(one.substr(3));
    if (got && got->size() == expected.size() &&
        CRYPTO_memcmp(got->data(), expected.data(), expected.size()) == 0) {
      return absl::OkStatus();
    }
  }
  if (!any_v1) {
    return absl::InvalidArgumentError("the webhook-signature header has no \"v1,\" signature");
  }
  return absl::UnauthenticatedError(
      "no webhook-signature matches the message: wrong secret, or "
      "the message was changed");
}

}  // namespace idem
