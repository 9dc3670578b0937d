// idem/key.h: parsing and validating idempotency keys and their scope (docs/design.md §1, §3).
//
// An `Idempotency-Key` header carries one key, either as a Structured Fields string (RFC 8941
// sf-string, `"abc"`, where only \" and \\ may be escaped) or as a bare token. The key text is
// 1–255 visible ASCII characters (0x21–0x7E); a space is refused even inside a quoted string,
// because the stored key must be the same visible-ASCII text however it was sent.
// See docs/fingerprints-and-keys.md.
//
// Thread-safety: pure functions; call from any thread.
#ifndef IDEM_KEY_H_
#define IDEM_KEY_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/record.h"

namespace idem {

// Longest key, in characters (bytes: keys are ASCII).
inline constexpr std::size_t kMaxKeyLength = 255;
// Longest tenant, in bytes.
inline constexpr std::size_t kMaxTenantLength = 255;

// Parses the value of an `Idempotency-Key` header field and returns the key text (quotes removed,
// escapes resolved). Spaces and tabs around the value are ignored.
//
// Accepted: `"abc"`, `"a\"b"` (key a"b), and a bare token made of RFC 8941 token characters
// (letters, digits and !#$%&'*+-.^_`|~:/), which may start with a digit so that bare UUIDs pass.
// Returns InvalidArgument, with a message that says what to fix, for: an empty value or key, a key
// longer than kMaxKeyLength, a list (`"a", "b"`, as when the header is sent twice), parameters
// (`"a";x=1`), a control character, a non-ASCII byte, a space inside the key, an unterminated
// quoted string, an escape other than \" or \\, or a bare value with a character that needs
// quoting.
absl::StatusOr<std::string> ParseIdempotencyKey(std::string_view header_value);

// Returns OK when `key` is 1–kMaxKeyLength visible ASCII characters (0x21–0x7E), else
// InvalidArgument naming the offending length or character.
absl::Status ValidateKey(std::string_view key);

// Returns OK when scope.key passes ValidateKey and scope.tenant is at most kMaxTenantLength bytes
// of valid UTF-8 without control characters (it may be empty: one global scope); else
// InvalidArgument. Stores call this before touching the database.
absl::Status ValidateScope(const Scope& scope);

}  // namespace idem

#endif  // IDEM_KEY_H_
