// A plain libpq session, as a program in any language opens one, for the tests of the SQL
// functions of schema idem (docs/sql.md): statements with text parameters, answers as text, and
// the SQLSTATE and message of a statement that failed.
#ifndef IDEM_TESTS_POSTGRES_SQL_SESSION_H_
#define IDEM_TESTS_POSTGRES_SQL_SESSION_H_

#include <libpq-fe.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace idem::pgtest {

struct SqlAnswer {
  std::string sqlstate;  // empty when the statement succeeded
  std::string message;   // the server's primary message when it failed
  std::vector<std::vector<std::optional<std::string>>> rows;  // NULL as nullopt

  bool ok() const { return sqlstate.empty(); }
  // The text of row r, column c ("<null>" for NULL, "<none>" when there is no such cell).
  std::string At(size_t r, size_t c) const;
};

class SqlSession {
 public:
  // Connects to `uri`; null (and `error` set) when the server cannot be reached.
  static std::unique_ptr<SqlSession> Open(const std::string& uri, std::string* error = nullptr);
  SqlSession(const SqlSession&) = delete;
  SqlSession& operator=(const SqlSession&) = delete;
  ~SqlSession();

  // Runs one statement with text parameters ($1, $2, ...; nullopt sends NULL).
  SqlAnswer Exec(const std::string& sql,
                 const std::vector<std::optional<std::string>>& params = {});
  int backend_pid() const { return PQbackendPID(conn_); }

 private:
  explicit SqlSession(PGconn* conn) : conn_(conn) {}
  PGconn* conn_;
};

}  // namespace idem::pgtest

#endif  // IDEM_TESTS_POSTGRES_SQL_SESSION_H_
