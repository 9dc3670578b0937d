// The CallerFactory of PostgreSQL (src/store/testing/caller_connection.h): a plain libpq
// connection, as an application opens it, to a fresh schema on the fixture's server.
#include <libpq-fe.h>

#include <memory>
#include <string>

#include "idem/borrowed_transaction.h"
#include "pg_test_support.h"

namespace idem::pgtest {
namespace {

class PgCallerConnection final : public testing::CallerConnection {
 public:
  explicit PgCallerConnection(PGconn* conn) : conn_(conn) {}
  PgCallerConnection(const PgCallerConnection&) = delete;
  PgCallerConnection& operator=(const PgCallerConnection&) = delete;
  ~PgCallerConnection() override { PQfinish(conn_); }

  absl::Status Exec(const std::string& sql) override {
    PGresult* result = PQexec(conn_, sql.c_str());
    const ExecStatusType status = PQresultStatus(result);
    absl::Status outcome = absl::OkStatus();
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      outcome = absl::InternalError(sql + ": " + PQresultErrorMessage(result));
    }
    PQclear(result);
    return outcome;
  }

  absl::StatusOr<int64_t> QueryInt(const std::string& sql) override {
    PGresult* result = PQexec(conn_, sql.c_str());
    absl::StatusOr<int64_t> value = int64_t{0};
    if (PQresultStatus(result) != PGRES_TUPLES_OK) {
      value = absl::InternalError(sql + ": " + PQresultErrorMessage(result));
    } else if (PQntuples(result) > 0) {
      value = std::stoll(PQgetvalue(result, 0, 0));
    }
    PQclear(result);
    return value;
  }

  absl::StatusOr<std::unique_ptr<StoreTransaction>> Borrow(const BorrowOptions& options) override {
    return BorrowPostgresTransaction(conn_, options);
  }

  std::string begin_sql() const override { return "BEGIN"; }

 private:
  PGconn* conn_;
};

// The URI of the running test's last open_fresh.
std::string& CurrentCallerUri() {
  static std::string uri;
  return uri;
}

absl::StatusOr<std::unique_ptr<testing::CallerConnection>> OpenPgCaller(const std::string& uri) {
  auto conn = std::make_unique<PgCallerConnection>(PQconnectdb(uri.c_str()));
  if (absl::Status ok = conn->Exec("SELECT 1"); !ok.ok()) return ok;
  return conn;
}

}  // namespace

testing::CallerFactory PostgresCallerFactory() {
  return testing::CallerFactory{
      .name = "postgres",
      .open_fresh =
          [](bool with_schema) -> absl::StatusOr<std::unique_ptr<testing::CallerConnection>> {
        absl::StatusOr<FreshSchema> fresh = CreateFreshSchemaUri();
        if (!fresh.ok()) return fresh.status();
        CurrentCallerUri() = fresh->uri;
        if (with_schema) {
          absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh->uri);
          if (!store.ok()) return store.status();
        }
        return OpenPgCaller(fresh->uri);
      },
      .open_again = []() { return OpenPgCaller(CurrentCallerUri()); },
  };
}

}  // namespace idem::pgtest
