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

// Returns `conninfo` with every secret replaced by "***": the password of a URI's user info (up to
// its last '@'), a password or sslpassword query parameter (its name percent-decoded, as libpq
// does), and the value of a password or sslpassword keyword of a key=value string, quoted or not.
// From a malformed part of a key=value string on, everything is hidden.
std::string RedactPassword(std::string_view conninfo);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_URI_H_
