#include "pg_test_support.h"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "idem/store.h"

namespace idem::pgtest {
namespace {

struct ConnCloser {
  void operator()(PGconn* conn) const { PQfinish(conn); }
};
struct ResultCloser {
  void operator()(PGresult* result) const { PQclear(result); }
};

// The fixture's state directory: IDEM_PG_FIXTURE_DIR from the environment when CTest sets it (a
// test that restarts its server gets a server of its own), else the shared fixture's.
std::string FixtureDir() {
  const char* from_environment = std::getenv("IDEM_PG_FIXTURE_DIR");
  if (from_environment != nullptr && *from_environment != '\0') return from_environment;
  return IDEM_PG_FIXTURE_DIR;
}

}  // namespace

absl::StatusOr<std::string> ServerUri() {
  const std::string path = FixtureDir() + "/uri";
  std::ifstream in(path);
  std::string uri;
  if (!in || !std::getline(in, uri) || uri.empty()) {
    return absl::FailedPreconditionError(fmt::format(
        "{} is missing: the PostgreSQL fixture did not start (run the test through ctest, which "
        "runs postgres_fixture_start first, or scripts/pg-fixture.sh start {})",
        path, FixtureDir()));
  }
  return uri;
}

std::string UriWithSchema(std::string_view uri, std::string_view schema) {
  const char separator = uri.find('?') == std::string_view::npos ? '?' : '&';
  return fmt::format("{}{}options=-csearch_path%3D{}", uri, separator, schema);
}

absl::StatusOr<FreshSchema> CreateFreshSchemaUri() {
  absl::StatusOr<std::string> server = ServerUri();
  if (!server.ok()) return server.status();
  absl::StatusOr<std::string> schema = CreateFreshSchema();
  if (!schema.ok()) return schema.status();
  return FreshSchema{.schema = *schema, .uri = UriWithSchema(*server, *schema)};
}

absl::StatusOr<std::vector<std::vector<std::string>>> AdminQuery(std::string_view schema,
                                                                 std::string_view sql) {
  absl::StatusOr<std::string> uri = ServerUri();
  if (!uri.ok()) return uri.status();
  const std::string target = schema.empty() ? *uri : UriWithSchema(*uri, schema);
  std::unique_ptr<PGconn, ConnCloser> conn(PQconnectdb(target.c_str()));
  if (PQstatus(conn.get()) != CONNECTION_OK) {
    return absl::UnavailableError(fmt::format("admin connection: {}", PQerrorMessage(conn.get())));
  }
  std::unique_ptr<PGresult, ResultCloser> result(PQexec(conn.get(), std::string(sql).c_str()));
  const ExecStatusType status = PQresultStatus(result.get());
  if (status != PGRES_TUPLES_OK && status != PGRES_COMMAND_OK) {
    return absl::InternalError(
        fmt::format("admin query '{}': {}", sql, PQresultErrorMessage(result.get())));
  }
  std::vector<std::vector<std::string>> rows;
  for (int r = 0; r < PQntuples(result.get()); ++r) {
    auto& row = rows.emplace_back();
    for (int c = 0; c < PQnfields(result.get()); ++c) {
      row.push_back(PQgetisnull(result.get(), r, c) ? "<null>" : PQgetvalue(result.get(), r, c));
    }
  }
  return rows;
}

absl::StatusOr<std::string> CreateFreshSchema() {
  static std::atomic<int> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  const std::string schema = fmt::format("t_{}_{}_{}", getpid(), now % 1'000'000'000, ++counter);
  absl::StatusOr<std::vector<std::vector<std::string>>> done =
      AdminQuery("", fmt::format("CREATE SCHEMA {}", schema));
  if (!done.ok()) return done.status();
  return schema;
}

namespace {

// The schema the running test's open_fresh made; open_again reopens it.
std::string& CurrentSchema() {
  static std::string schema;
  return schema;
}

absl::StatusOr<std::unique_ptr<Store>> OpenInSchema(const std::string& schema,
                                                    const StoreOptions& options) {
  absl::StatusOr<std::string> uri = ServerUri();
  if (!uri.ok()) return uri.status();
  return OpenStore(UriWithSchema(*uri, schema), options);
}

}  // namespace

testing::StoreFactory PostgresStoreFactory() {
  return testing::StoreFactory{
      .name = "postgres",
      .open_fresh = [](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
        absl::StatusOr<std::string> schema = CreateFreshSchema();
        if (!schema.ok()) return schema.status();
        CurrentSchema() = *schema;
        return OpenInSchema(*schema, options);
      },
      .open_again = [](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
        if (CurrentSchema().empty()) {
          return absl::FailedPreconditionError("open_again before open_fresh");
        }
        return OpenInSchema(CurrentSchema(), options);
      },
  };
}

absl::Status RestartServer() {
  const std::string command =
      fmt::format("'{}' restart '{}'", IDEM_PG_FIXTURE_SCRIPT, FixtureDir());
  const int rc = std::system(command.c_str());
  if (rc != 0) return absl::InternalError(fmt::format("'{}' exited with {}", command, rc));
  return absl::OkStatus();
}

}  // namespace idem::pgtest
