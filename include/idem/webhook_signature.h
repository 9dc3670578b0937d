// idem/webhook_signature.h: Standard Webhooks signatures (https://www.standardwebhooks.com/),
// as `idem relay --sink http` signs every message and as a receiver checks them.
//
//   webhook-id:        the message id
//   webhook-timestamp: unix seconds when it was sent
//   webhook-signature: "v1,<base64 of HMAC-SHA256(key, id + "." + timestamp + "." + body)>"
//                      (a receiver accepts a space-separated list, any one matching)
//
// The key is the secret's base64 after the "whsec_" prefix, decoded.
//
// Thread-safety: pure functions; safe from any thread.
#ifndef IDEM_WEBHOOK_SIGNATURE_H_
#define IDEM_WEBHOOK_SIGNATURE_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace idem {

// Returns the key bytes of a secret written "whsec_<base64>". Errors: InvalidArgument (naming
// what is wrong, never echoing the secret) when the prefix is missing, the rest is not
// standard base64 (padding optional), or the key is shorter than 16 or longer than 128 bytes.
absl::StatusOr<std::string> DecodeWebhookSecret(std::string_view secret);

// Returns the webhook-signature header value "v1,<base64>" for the message.
std::string SignWebhook(std::string_view key, std::string_view id, int64_t timestamp_seconds,
                        std::string_view body);

// Checks a received webhook. `now_seconds` is the receiver's clock; the timestamp must be within
// `tolerance_seconds` of it, either way (default 5 minutes, the specification's suggestion), so a
// captured request cannot be replayed later. Signatures are compared in constant time.
// Errors: InvalidArgument when a header is missing or malformed (the timestamp not an integer,
// no "v1," signature); Unauthenticated when the timestamp is outside the tolerance or no v1
// signature matches.
absl::Status VerifyWebhook(std::string_view key, std::string_view id, std::string_view timestamp,
                           std::string_view signature_header, std::string_view body,
                           int64_t now_seconds, int64_t tolerance_seconds = 300);

}  // namespace idem

#endif  // IDEM_WEBHOOK_SIGNATURE_H_
