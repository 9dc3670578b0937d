// Test support: a connection of the application's own (a raw sqlite3* or PGconn*, outside any
// idem store) to a database of its own, whose transactions the borrowed-transaction suites
// (src/inbox/testing/borrowed_inbox_suite.cc, src/guard/testing/borrowed_guard_suite.cc) borrow
// (idem/borrowed_transaction.h). Each backend provides a CallerFactory and instantiates the
// suites in its own test binary, as with StoreFactory.
#ifndef IDEM_STORE_TESTING_CALLER_CONNECTION_H_
#define IDEM_STORE_TESTING_CALLER_CONNECTION_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/borrowed_transaction.h"
#include "idem/store.h"

namespace idem::testing {

class CallerConnection {
 public:
  virtual ~CallerConnection() = default;
  // Runs `sql` on the raw connection, as the application would (BEGIN, COMMIT, its own writes).
  // Errors: Internal with the database's message.
  virtual absl::Status Exec(const std::string& sql) = 0;
  // Runs `sql` on the raw connection and returns the first column of its first row as an
  // integer, 0 when there is no row.
  virtual absl::StatusOr<int64_t> QueryInt(const std::string& sql) = 0;
  // Borrows the transaction open on the raw connection.
  virtual absl::StatusOr<std::unique_ptr<StoreTransaction>> Borrow(
      const BorrowOptions& options) = 0;
  // How the application begins a transaction the guard runs in: BEGIN IMMEDIATE on SQLite.
  virtual std::string begin_sql() const = 0;
};

struct CallerFactory {
  std::string name;  // a test-name-safe label
  // A connection to a database no other test uses, holding idem's schema (OpenStore ran on it)
  // when `with_schema`, else empty.
  std::function<absl::StatusOr<std::unique_ptr<CallerConnection>>(bool with_schema)> open_fresh;
  // Another connection to the database of the running test's last open_fresh (as another
  // process of the application would open it).
  std::function<absl::StatusOr<std::unique_ptr<CallerConnection>>()> open_again;
};

inline void PrintTo(const CallerFactory& factory, std::ostream* os) { *os << factory.name; }

inline std::string CallerFactoryName(const ::testing::TestParamInfo<CallerFactory>& info) {
  return info.param.name;
}

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_CALLER_CONNECTION_H_
