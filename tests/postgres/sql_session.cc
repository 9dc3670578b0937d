#include "sql_session.h"

namespace idem::pgtest {
namespace {

// Notices and warnings ("there is no transaction in progress" after a ROLLBACK the workers send
// to be sure) are not errors; keep them off the test's output.
void IgnoreNotice(void*, const char*) {}

}  // namespace

std::string SqlAnswer::At(size_t r, size_t c) const {
  if (r >= rows.size() || c >= rows[r].size()) return "<none>";
  return rows[r][c].value_or("<null>");
}

std::unique_ptr<SqlSession> SqlSession::Open(const std::string& uri, std::string* error) {
  PGconn* conn = PQconnectdb(uri.c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    if (error != nullptr) *error = PQerrorMessage(conn);
    PQfinish(conn);
    return nullptr;
  }
  PQsetNoticeProcessor(conn, &IgnoreNotice, nullptr);
  return std::unique_ptr<SqlSession>(new SqlSession(conn));
}

SqlSession::~SqlSession() { PQfinish(conn_); }

SqlAnswer SqlSession::Exec(const std::string& sql,
                           const std::vector<std::optional<std::string>>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PGresult* result = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                                  values.data(), nullptr, nullptr, 0);
  SqlAnswer answer;
  const ExecStatusType status = PQresultStatus(result);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    const char* state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    const char* message = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    answer.sqlstate = state != nullptr ? state : "?????";  // no SQLSTATE: the connection broke
    answer.message = message != nullptr ? message : PQerrorMessage(conn_);
  } else {
    for (int r = 0; r < PQntuples(result); ++r) {
      auto& row = answer.rows.emplace_back();
      for (int c = 0; c < PQnfields(result); ++c) {
        if (PQgetisnull(result, r, c)) {
          row.emplace_back(std::nullopt);
        } else {
          row.emplace_back(std::string(PQgetvalue(result, r, c), PQgetlength(result, r, c)));
        }
      }
    }
  }
  PQclear(result);
  return answer;
}

}  // namespace idem::pgtest
