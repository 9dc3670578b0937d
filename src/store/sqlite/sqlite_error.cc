#include "store/sqlite/sqlite_error.h"

#include <fmt/format.h>

#include <string>

namespace idem::sqlite {
namespace {

std::string Detail(int rc, sqlite3* db) {
  // sqlite3_errmsg describes the most recent failure on `db`, which is only ours when its code
  // matches; otherwise fall back to the generic text of the code.
  if (db != nullptr && sqlite3_extended_errcode(db) == rc) return sqlite3_errmsg(db);
  return sqlite3_errstr(rc);
}

}  // namespace

absl::Status FromSqlite(int rc, sqlite3* db, std::string_view what) {
  if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return absl::OkStatus();
  // A connection without extended result codes (a caller's own, idem/borrowed_transaction.h)
  // reports primary codes only; the extended one tells a unique violation from other constraints.
  if (db != nullptr && rc == (rc & 0xff) && (sqlite3_extended_errcode(db) & 0xff) == rc) {
    rc = sqlite3_extended_errcode(db);
  }
  const std::string detail = Detail(rc, db);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(fmt::format(
          "{}: the database is locked by another connection or process ({}); retry later, or "
          "allow a longer lock timeout",
          what, detail));
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_NOMEM:
    case SQLITE_INTERRUPT:
      return absl::UnavailableError(fmt::format(
          "{}: the store is unavailable: the disk is full, an I/O error occurred or memory ran out "
          "({}); nothing of the failed transaction was kept: free space or fix the disk, then "
          "retry",
          what, detail));
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_PRIMARYKEY || rc == SQLITE_CONSTRAINT_UNIQUE) {
        return absl::AlreadyExistsError(fmt::format("{}: {}", what, detail));
      }
      return absl::InvalidArgumentError(fmt::format("{}: {}", what, detail));
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(fmt::format(
          "{}: the file is not a SQLite database or is corrupt ({}); restore it from a backup or "
          "point the store at another path",
          what, detail));
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::PermissionDeniedError(fmt::format(
          "{}: {}; check that the directory exists and that this process may write the file "
          "and its directory",
          what, detail));
    default:
      return absl::InternalError(fmt::format("{}: SQLite error {} ({})", what, rc, detail));
  }
}

}  // namespace idem::sqlite
