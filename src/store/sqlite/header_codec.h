// The stored form of a response's headers: an exact, length-prefixed encoding.
//
// Each header is written as "<name length>:<name><value length>:<value>" (decimal lengths), one
// after another, in order. Names and values are kept byte for byte, so any byte (NUL, ':',
// newline) survives a round trip and the order of headers is preserved.
// persisted: never change the format without a migration.
//
// Thread-safety: stateless functions.
#ifndef IDEM_STORE_SQLITE_HEADER_CODEC_H_
#define IDEM_STORE_SQLITE_HEADER_CODEC_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/record.h"

namespace idem::sqlite {

// Returns the encoding of `headers` (empty for no headers).
std::string EncodeHeaders(const std::vector<Header>& headers);

// Returns the headers `encoded` holds. Errors: DataLoss when it is not a valid encoding.
absl::StatusOr<std::vector<Header>> DecodeHeaders(std::string_view encoded);

}  // namespace idem::sqlite

#endif  // IDEM_STORE_SQLITE_HEADER_CODEC_H_
