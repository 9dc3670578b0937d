// Translates PostgreSQL's errors (SQLSTATEs, libpq connection failures) into idem's status codes,
// in this one place (STYLE: foreign errors are translated once, at the boundary).
#ifndef IDEM_STORE_POSTGRES_PG_ERROR_H_
#define IDEM_STORE_POSTGRES_PG_ERROR_H_

#include <libpq-fe.h>

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace idem::postgres {

// Returns the status for a server error with `sqlstate` (five characters) and `message`:
//   23505 unique violation → AlreadyExists; other 23xxx, 22xxx, 42xxx (but 42501) →
//   InvalidArgument; 40001 serialization failure, 40P01 deadlock, 55P03 lock timeout, 57014
//   statement timeout or cancel, class 08 connection, 57P01..57P03 server shutting down or
//   starting, class 53 insufficient resources → Unavailable; 28P01 wrong password →
//   Unauthenticated; 28000 and 42501 → PermissionDenied; 3D000 unknown database → NotFound; 25P02 →
//   Internal (the transaction already failed); 42P01 for a table idem_* (idem's schema
//   is missing) → NotFound; anything else → Internal.
// `what` names the operation, e.g. "claim of key 'k'".
absl::Status StatusFromSqlState(std::string_view sqlstate, std::string_view message,
                                std::string_view what);

// true for the SQLSTATEs after which the connection cannot be trusted again (class 08, 57P0x).
bool IsConnectionLoss(std::string_view sqlstate);

// true for a status StatusFromSqlState made of 40P01 (deadlock detected): the server rolled that
// transaction back, so nothing of it was committed and it may be run again as it was.
bool IsDeadlock(const absl::Status& status);

// Returns the status of a finished command: OK for PGRES_COMMAND_OK / TUPLES_OK, else the mapped
// error. A null result or an error without SQLSTATE on a broken connection is a lost connection
// (Unavailable).
absl::Status StatusFromResult(const PGresult* result, PGconn* conn, std::string_view what);

// Returns the status for a connection attempt that failed (PQstatus == CONNECTION_BAD). libpq
// reports no SQLSTATE here, so the server's (C-locale) message is read: bad password →
// Unauthenticated; unknown role or no pg_hba.conf entry → PermissionDenied; unknown database →
// NotFound; anything else (refused, timed out, unknown host) → Unavailable.
absl::Status StatusFromConnectFailure(std::string_view libpq_message, std::string_view target);

}  // namespace idem::postgres

#endif  // IDEM_STORE_POSTGRES_PG_ERROR_H_
