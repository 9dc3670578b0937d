// Checks a store URI / libpq conninfo before any connection is tried, and names its server for
// messages without the password.
#ifndef IDEM_STORE_POSTGRES_PG_URI_H_
#define IDEM_STORE_POSTGRES_PG_URI_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idem::postgres {

struct ParsedConninfo {
  std::string target;  // "user@host:port/dbname", no password
};

// Errors: InvalidArgument for an empty or malformed conninfo, naming libpq's complaint.
absl::StatusOr<ParsedConninfo> ParseConninfo(std::string_view conninfo);

// Returns `conninfo` with any password replaced by "***".
std::string RedactPassword(std::string_view conninfo);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_URI_H_
