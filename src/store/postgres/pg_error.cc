#include "store/postgres/pg_error.h"

#include <fmt/format.h>

namespace idem::postgres {
namespace {

std::string Trimmed(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return std::string(text);
}

bool Contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

bool IsConnectionLoss(std::string_view sqlstate) {
  return sqlstate.starts_with("08") || sqlstate == "57P01" || sqlstate == "57P02" ||
         sqlstate == "57P03";
}

bool IsDeadlock(const absl::Status& status) {
  const std::string_view message(status.message().data(), status.message().size());
  return absl::IsUnavailable(status) && Contains(message, "(SQLSTATE 40P01)");
}

absl::Status StatusFromSqlState(std::string_view sqlstate, std::string_view message,
                                std::string_view what) {
  const std::string text =
      fmt::format("PostgreSQL {}: {} (SQLSTATE {})", what, Trimmed(message), sqlstate);
  if (sqlstate == "23505") return absl::AlreadyExistsError(text);
  if (sqlstate == "40001" || sqlstate == "40P01") {
    return absl::UnavailableError(text + "; nothing was recorded: retry the transaction");
  }
  if (sqlstate == "55P03" || sqlstate == "57014") {
    return absl::UnavailableError(
        text +
        "; another transaction held the key or the statement ran too long (lock_timeout, "
        "statement_timeout): retry later");
  }
  if (IsConnectionLoss(sqlstate) || sqlstate.starts_with("53")) {
    return absl::UnavailableError(text +
                                  "; the server is unreachable, restarting or out of "
                                  "resources: retry later");
  }
  if (sqlstate == "28P01") return absl::UnauthenticatedError(text + "; check the password");
  if (sqlstate == "42501" || sqlstate.starts_with("28")) {
    return absl::PermissionDeniedError(text + "; grant the role access or use another role");
  }
  if (sqlstate == "3D000") {
    return absl::NotFoundError(text + "; create the database or fix the URI's database name");
  }
  if (sqlstate == "25P02") {
    return absl::InternalError(text +
                               "; an earlier statement of this transaction failed: it is good "
                               "only for rolling back (to a savepoint, or whole)");
  }
  if (sqlstate == "42P01" && Contains(message, "relation \"idem_")) {
    // Only a database idem never opened lacks idem's tables (a caller's own connection,
    // idem/borrowed_transaction.h): say how to get them. A setup error, never
    // FailedPrecondition (a reused key's code): NotFound, as a database that does not exist.
    return absl::NotFoundError(
        text +
        "; the database (or the schema your search_path names) lacks idem's schema: open it "
        "once with idem::OpenStore(\"postgresql://...\"), which applies idem's migrations");
  }
  if (sqlstate.starts_with("42") || sqlstate.starts_with("22") || sqlstate.starts_with("23") ||
      sqlstate.starts_with("3F") || sqlstate.starts_with("0A")) {
    return absl::InvalidArgumentError(text);
  }
  return absl::InternalError(text);
}

absl::Status StatusFromResult(const PGresult* result, PGconn* conn, std::string_view what) {
  const ExecStatusType status = result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result);
  if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK || status == PGRES_PIPELINE_SYNC) {
    return absl::OkStatus();
  }
  const char* sqlstate = result ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const char* message = result ? PQresultErrorMessage(result) : nullptr;
  if (message == nullptr || *message == '\0') message = PQerrorMessage(conn);
  if (sqlstate != nullptr) return StatusFromSqlState(sqlstate, message, what);
  if (PQstatus(conn) == CONNECTION_BAD || result == nullptr) {
    return absl::UnavailableError(fmt::format(
        "PostgreSQL {}: lost the connection to the server: {}; nothing was recorded: retry", what,
        Trimmed(message)));
  }
  if (status == PGRES_PIPELINE_ABORTED) {
    return absl::InternalError(fmt::format(
        "PostgreSQL {}: not run, an earlier statement of the transaction failed", what));
  }
  return absl::InternalError(
      fmt::format("PostgreSQL {}: {} ({})", what, Trimmed(message), PQresStatus(status)));
}

absl::Status StatusFromConnectFailure(std::string_view libpq_message, std::string_view target) {
  const std::string text =
      fmt::format("cannot connect to PostgreSQL at {}: {}", target, Trimmed(libpq_message));
  if (Contains(libpq_message, "password authentication failed") ||
      Contains(libpq_message, "no password supplied")) {
    return absl::UnauthenticatedError(text + "; check the user name and password in the URI");
  }
  if (Contains(libpq_message, "no pg_hba.conf entry") ||
      (Contains(libpq_message, "role \"") && Contains(libpq_message, "does not exist")) ||
      Contains(libpq_message, "permission denied")) {
    return absl::PermissionDeniedError(
        text + "; use a role the server lets in (pg_hba.conf, CREATE ROLE ... LOGIN)");
  }
  if (Contains(libpq_message, "invalid integer value") ||
      Contains(libpq_message, "invalid port number") ||
      Contains(libpq_message, "invalid connection option") ||
      Contains(libpq_message, "unrecognized configuration parameter") ||
      Contains(libpq_message, "invalid value for parameter") ||
      Contains(libpq_message, "invalid sslmode value")) {
    return absl::InvalidArgumentError(text + "; fix the store URI");
  }
  if (Contains(libpq_message, "database \"") && Contains(libpq_message, "does not exist")) {
    return absl::NotFoundError(text + "; create the database or fix the URI's database name");
  }
  return absl::UnavailableError(text + "; is the server running and reachable?");
}

}  // namespace idem::postgres
