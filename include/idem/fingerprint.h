// idem/fingerprint.h: the request fingerprint stored with a key (docs/design.md §3). A retry
// with the same key must send the same request; a different fingerprint means the key was
// reused for another request (HTTP 422).
//
// The fingerprint is the lowercase hex SHA-256 of, in order and each length-prefixed (so that
// ("ab", "c") and ("a", "bc") differ): a version tag, the method (as sent; methods are
// case-sensitive), the target (path and query, as sent), the body, and the included headers.
// The body is canonicalised (RFC 8785, idem/canonical_json.h) when it parses as JSON, whatever
// its Content-Type, so key order, whitespace and number spelling do not matter; any other body,
// including invalid JSON, is hashed as raw bytes. The two cases are tagged differently.
//
// Thread-safety: pure functions; call from any thread.
#ifndef IDEM_FINGERPRINT_H_
#define IDEM_FINGERPRINT_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "idem/record.h"

namespace idem {

struct FingerprintInput {
  std::string_view method;      // e.g. "POST"
  std::string_view target;      // path and query, e.g. "/v1/charges?expand=customer"
  std::string_view body;        // raw bytes
  std::vector<Header> headers;  // the request's headers; only included_headers are read
};

struct FingerprintOptions {
  // JSON pointers (RFC 6901) left out of a JSON body before hashing, e.g. "/client_timestamp".
  // Ignored for a body that is not JSON. Default: none.
  std::vector<std::string> excluded_json_pointers;
  // Header names (case-insensitive) whose values are part of the fingerprint. Their order and
  // repetition here do not matter. A header sent several times contributes every value in the
  // order sent; a header absent from the request differs from one sent empty. Default: none.
  std::vector<std::string> included_headers;
};

// Returns OK when every excluded pointer is well formed (see CanonicalizeJson) and every included
// header name is a non-empty HTTP token; else InvalidArgument naming the bad entry. Configuration
// loaders call this once; Fingerprint ignores malformed pointers.
absl::Status ValidateFingerprintOptions(const FingerprintOptions& options);

// Returns the 64-character lowercase hex fingerprint of `input`. Never fails.
std::string Fingerprint(const FingerprintInput& input, const FingerprintOptions& options = {});

// Returns the 64-character lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace idem

#endif  // IDEM_FINGERPRINT_H_
