// The stored form of an outbox message's headers: a JSON array of [name, value] pairs, in order
// (text a person can read in SQL and in `idem outbox show`). persisted: never change the format
// without a migration.
//
// Thread-safety: stateless functions.
#ifndef IDEM_OUTBOX_OUTBOX_HEADERS_H_
#define IDEM_OUTBOX_OUTBOX_HEADERS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/record.h"

namespace idem::outbox {

// Returns the JSON text of `headers` ("[]" for none).
std::string EncodeHeaders(const std::vector<Header>& headers);

// Returns the headers `text` holds. Errors: DataLoss when it is not an array of string pairs.
absl::StatusOr<std::vector<Header>> DecodeHeaders(std::string_view text);

}  // namespace idem::outbox

#endif  // IDEM_OUTBOX_OUTBOX_HEADERS_H_
