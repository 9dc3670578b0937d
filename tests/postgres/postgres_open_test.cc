// Opening the PostgreSQL store: migrations, and every kind of bad input named clearly.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../common/port_claim.h"
#include "idem/postgres_store.h"
#include "idem/store.h"
#include "pg_test_support.h"
#include "store/postgres/pg_schema.h"

namespace idem {
namespace {

using pgtest::AdminQuery;

class PostgresOpen : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> uri = pgtest::ServerUri();
    ASSERT_TRUE(uri.ok()) << uri.status();
    server_ = *uri;
    absl::StatusOr<std::string> schema = pgtest::CreateFreshSchema();
    ASSERT_TRUE(schema.ok()) << schema.status();
    schema_ = *schema;
    uri_ = pgtest::UriWithSchema(server_, schema_);
  }

  // The server's URI with `userinfo` and `database` replaced.
  std::string ServerWith(std::string_view userinfo, std::string_view database) const {
    const size_t at = server_.find('@');
    const size_t slash = server_.rfind('/');
    return fmt::format("postgresql://{}@{}/{}", userinfo, server_.substr(at + 1, slash - at - 1),
                       database);
  }

  std::vector<std::vector<std::string>> Rows(std::string_view sql) {
    auto rows = AdminQuery(schema_, sql);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : std::vector<std::vector<std::string>>{};
  }

  std::string server_;
  std::string schema_;
  std::string uri_;
};

// The fixture's port is claimed for the server's life (scripts/test-ports.sh): while a test
// restarts or pauses the server, no e2e test is handed that port.
TEST_F(PostgresOpen, TheFixturesPortIsClaimedAgainstOtherTestProcesses) {
  const size_t colon = server_.rfind(':');
  const size_t slash = server_.rfind('/');
  ASSERT_NE(colon, std::string::npos);
  const int port = std::stoi(server_.substr(colon + 1, slash - colon - 1));
  EXPECT_TRUE(testing::PortClaimedElsewhere(port)) << port;
  EXPECT_FALSE(testing::PortClaimedElsewhere(1)) << "a port nobody claimed";
}

TEST_F(PostgresOpen, FreshSchemaIsMigratedToTheNewestVersion) {
  ASSERT_TRUE(OpenStore(uri_).ok());
  EXPECT_EQ(Rows("SELECT version, name FROM idem_schema_migrations"),
            (std::vector<std::vector<std::string>>{{"1", "0001_create_idem_keys.sql"},
                                                   {"2", "0002_fence_sequence.sql"},
                                                   {"3", "0003_outbox.sql"},
                                                   {"4", "0004_inbox.sql"},
                                                   {"5", "0005_outbox_redrive_notify.sql"},
                                                   {"6", "0006_in_progress_index.sql"},
                                                   {"7", "0007_claim_nonce.sql"},
                                                   {"8", "0008_sql_functions.sql"},
                                                   {"9", "0009_sql_functions_faster.sql"}}));
  EXPECT_EQ(Rows("SELECT count(*) FROM idem_keys"), (std::vector<std::vector<std::string>>{{"0"}}));
}

TEST_F(PostgresOpen, BothUriSchemesOpen) {
  std::string short_scheme = uri_;
  short_scheme.replace(0, std::string_view("postgresql").size(), "postgres");
  EXPECT_TRUE(OpenStore(short_scheme).ok());
}

TEST_F(PostgresOpen, ReopeningAppliesNothingTwice) {
  ASSERT_TRUE(OpenStore(uri_).ok());
  const auto applied_once = Rows("SELECT version FROM idem_schema_migrations ORDER BY version");
  ASSERT_TRUE(OpenStore(uri_).ok());
  EXPECT_EQ(Rows("SELECT version FROM idem_schema_migrations ORDER BY version"), applied_once);
}

TEST_F(PostgresOpen, ManyProcessesOpeningAtOnceMigrateOnce) {
  constexpr int kOpeners = 8;
  std::vector<absl::Status> results(kOpeners);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&, i] { results[i] = OpenStore(uri_).status(); });
  }
  for (std::thread& t : threads) t.join();
  for (const absl::Status& status : results) EXPECT_TRUE(status.ok()) << status;
  // Each migration once: as many rows as distinct versions, and every embedded one present.
  EXPECT_EQ(Rows("SELECT count(*), count(DISTINCT version), max(version) FROM "
                 "idem_schema_migrations"),
            (std::vector<std::vector<std::string>>{{"9", "9", "9"}}));
}

// Every opening takes the migration lock (processes started together queue on it). A store whose
// lock_timeout is set short for claims must wait there longer than that, not fail to open: found
// when a busier test run made one PostgresTransaction test's 100 ms opening fail.
TEST_F(PostgresOpen, AShortLockTimeoutStillWaitsForAnotherOpenersMigration) {
  absl::StatusOr<std::string> admin_uri = pgtest::ServerUri();
  ASSERT_TRUE(admin_uri.ok()) << admin_uri.status();
  PGconn* holder = PQconnectdb(admin_uri->c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK) << PQerrorMessage(holder);
  auto run = [&](const char* sql) {
    PGresult* result = PQexec(holder, sql);
    const ExecStatusType status = PQresultStatus(result);
    PQclear(result);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  };
  ASSERT_TRUE(run("BEGIN"));
  ASSERT_TRUE(
      run(fmt::format("SELECT pg_advisory_xact_lock({})", postgres::kMigrationLockKey).c_str()));

  const std::string name = "idem-open-" + schema_;
  StoreOptions options;
  options.lock_timeout = std::chrono::milliseconds(100);
  absl::Status opened = absl::UnknownError("not opened");
  std::atomic<bool> done{false};
  std::thread opener([&] {
    opened = OpenStore(uri_ + "&application_name=" + name, options).status();
    done = true;
  });
  // Held until the opening has waited on it three times its lock_timeout (or has given up).
  const std::string waited_long = fmt::format(
      "SELECT count(*) FROM pg_stat_activity WHERE application_name = '{}' AND "
      "wait_event_type = 'Lock' AND now() - query_start > interval '300 milliseconds'",
      name);
  bool seen = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done && !seen && std::chrono::steady_clock::now() < deadline) {
    seen = Rows(waited_long) == std::vector<std::vector<std::string>>{{"1"}};
  }
  EXPECT_TRUE(run("COMMIT"));
  opener.join();
  PQfinish(holder);
  EXPECT_TRUE(seen) << "the opening never waited 300 ms for the migration lock";
  EXPECT_TRUE(opened.ok()) << opened;
}

TEST_F(PostgresOpen, MalformedUriIsInvalidArgument) {
  absl::Status status = OpenStore("postgresql://user@127.0.0.1:5432/db?no_such_option=1").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_NE(status.message().find("no_such_option"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, NonNumericPortIsInvalidArgument) {
  absl::Status status = OpenStore("postgresql://user@127.0.0.1:port/db").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
}

TEST_F(PostgresOpen, UnreachableServerIsUnavailable) {
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  absl::Status status = OpenStore("postgresql://postgres@127.0.0.1:1/postgres").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("127.0.0.1:1"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, WrongPasswordIsUnauthenticatedAndNotEchoed) {
  absl::Status status = OpenStore(ServerWith("idem_password:wrong-password", "postgres")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_NE(status.message().find("password authentication failed"), absl::string_view::npos);
  EXPECT_EQ(status.message().find("wrong-password"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, RightPasswordOpens) {
  ASSERT_TRUE(AdminQuery("", fmt::format("GRANT ALL ON SCHEMA {} TO idem_password", schema_)).ok());
  std::string uri =
      pgtest::UriWithSchema(ServerWith("idem_password:right-password", "postgres"), schema_);
  absl::Status status = OpenStore(uri).status();
  EXPECT_TRUE(status.ok()) << status;
}

// The password may stay out of the URI (docs/operations.md): libpq reads it from a password file
// (HOST:PORT:DATABASE:USER:PASSWORD) named by the URI's passfile parameter or by PGPASSFILE; a
// file others may read is ignored, as libpq ignores it.
class PostgresPassfile : public PostgresOpen {
 protected:
  void SetUp() override {
    PostgresOpen::SetUp();
    ASSERT_TRUE(
        AdminQuery("", fmt::format("GRANT ALL ON SCHEMA {} TO idem_password", schema_)).ok());
    passfile_ = ::testing::TempDir() + "idem-" + schema_ + ".pgpass";
  }
  void TearDown() override {
    unsetenv("PGPASSFILE");
    std::remove(passfile_.c_str());
  }
  // Writes the password file for the role idem_password with `password`, mode `mode`.
  void WritePassfile(std::string_view password, mode_t mode) {
    std::ofstream(passfile_, std::ios::trunc) << "*:*:*:idem_password:" << password << "\n";
    ASSERT_EQ(chmod(passfile_.c_str(), mode), 0);
  }
  // The role idem_password with no password in the URI; `query` added before the schema's.
  std::string UriWithoutPassword(std::string_view query) const {
    return pgtest::UriWithSchema(
        fmt::format("{}{}", ServerWith("idem_password", "postgres"), query), schema_);
  }
  std::string passfile_;
};

TEST_F(PostgresPassfile, RightPasswordFromThePassfileTheUriNamesOpens) {
  WritePassfile("right-password", 0600);
  absl::Status status = OpenStore(UriWithoutPassword("?passfile=" + passfile_)).status();
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(PostgresPassfile, RightPasswordFromThePassfilePgpassfileNamesOpens) {
  WritePassfile("right-password", 0600);
  ASSERT_EQ(setenv("PGPASSFILE", passfile_.c_str(), 1), 0);
  absl::Status status = OpenStore(UriWithoutPassword("")).status();
  EXPECT_TRUE(status.ok()) << status;
}

TEST_F(PostgresPassfile, WrongPasswordInThePassfileIsUnauthenticatedAndNotEchoed) {
  WritePassfile("wrong-password", 0600);
  absl::Status status = OpenStore(UriWithoutPassword("?passfile=" + passfile_)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_NE(status.message().find("password authentication failed"), absl::string_view::npos);
  EXPECT_EQ(status.message().find("wrong-password"), absl::string_view::npos) << status;
}

TEST_F(PostgresPassfile, APassfileOthersMayReadIsIgnoredSoNoPasswordIsGiven) {
  WritePassfile("right-password", 0644);
  absl::Status status = OpenStore(UriWithoutPassword("?passfile=" + passfile_)).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_NE(status.message().find("no password supplied"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, UnknownRoleIsPermissionDenied) {
  absl::Status status = OpenStore(ServerWith("no_such_role", "postgres")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
}

TEST_F(PostgresOpen, UnknownDatabaseIsNotFound) {
  absl::Status status = OpenStore(ServerWith("postgres", "no_such_database")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_NE(status.message().find("no_such_database"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, SchemaOfNewerIdemIsFailedPrecondition) {
  ASSERT_TRUE(OpenStore(uri_).ok());
  Rows("INSERT INTO idem_schema_migrations VALUES (99, '0099_future.sql', 'x', 0)");
  absl::Status status = OpenStore(uri_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("newer than this idem"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, SchemaOfAnotherIdemBuildIsFailedPrecondition) {
  ASSERT_TRUE(OpenStore(uri_).ok());
  Rows("UPDATE idem_schema_migrations SET checksum = 'other' WHERE version = 1");
  absl::Status status = OpenStore(uri_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("differs"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, ForeignIdemKeysTableIsFailedPrecondition) {
  Rows("CREATE TABLE idem_keys (id integer)");
  absl::Status status = OpenStore(uri_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("not idem's"), absl::string_view::npos) << status;
}

TEST_F(PostgresOpen, FailedMigrationLeavesNothingBehind) {
  // The migration's CREATE TABLE succeeds, then its CREATE INDEX collides with this index name:
  // the whole migration, and the migrations table, must be rolled back.
  Rows("CREATE TABLE other (x integer); CREATE INDEX idem_keys_expires ON other (x)");
  absl::Status status = OpenStore(uri_).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("nothing of it was applied"), absl::string_view::npos) << status;
  EXPECT_EQ(Rows("SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                 "current_schema() AND table_name LIKE 'idem%'"),
            (std::vector<std::vector<std::string>>{{"0"}}));
}

TEST_F(PostgresOpen, ZeroMaxConnectionsIsInvalidArgument) {
  StoreOptions options;
  options.max_connections = 0;
  EXPECT_EQ(OpenStore(uri_, options).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem
