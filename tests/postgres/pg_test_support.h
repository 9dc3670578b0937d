// Helpers for tests against the fixture's PostgreSQL server (tests/postgres/CMakeLists.txt).
#ifndef IDEM_TESTS_POSTGRES_PG_TEST_SUPPORT_H_
#define IDEM_TESTS_POSTGRES_PG_TEST_SUPPORT_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "store/testing/caller_connection.h"
#include "store/testing/store_conformance.h"

namespace idem::pgtest {

// The URI of the fixture's server (superuser "postgres", database "postgres").
// Errors: FailedPrecondition naming the missing file when the fixture did not start.
absl::StatusOr<std::string> ServerUri();

// Creates an empty schema no other test uses and returns its name.
absl::StatusOr<std::string> CreateFreshSchema();

// `uri` with search_path set to `schema` (libpq's options parameter): the store's tables go there.
std::string UriWithSchema(std::string_view uri, std::string_view schema);

// A fresh schema on the fixture's server and the store URI that puts the store's tables there.
struct FreshSchema {
  std::string schema;
  std::string uri;
};
// Errors: as ServerUri and CreateFreshSchema.
absl::StatusOr<FreshSchema> CreateFreshSchemaUri();

// Runs `sql` (one or more statements) on the server with search_path `schema` (empty: default)
// and returns the last statement's rows as text (NULL as "<null>").
absl::StatusOr<std::vector<std::vector<std::string>>> AdminQuery(std::string_view schema,
                                                                 std::string_view sql);

// The StoreFactory the store conformance suite and the guard suites run PostgreSQL through: each
// open_fresh makes a fresh schema on the fixture's server; open_again reopens the newest one.
testing::StoreFactory PostgresStoreFactory();

// The CallerFactory the borrowed-transaction suites run PostgreSQL through: a plain libpq
// connection to a fresh schema, with idem's schema in it when asked.
testing::CallerFactory PostgresCallerFactory();

// Restarts the server (pg_ctl restart -m fast) and returns once it accepts connections again.
// Every other test on that server sees its connections drop: only a test with a server of its own
// (the "postgres_restart" fixture, tests/postgres/CMakeLists.txt) may call it.
absl::Status RestartServer();

}  // namespace idem::pgtest

#endif  // IDEM_TESTS_POSTGRES_PG_TEST_SUPPORT_H_
