// The borrowed-transaction inbox suite: TEST_P cases every store's test binary instantiates with
// its CallerFactory (src/inbox/inbox_sqlite_test.cc, tests/postgres/inbox_postgres_test.cc).
#ifndef IDEM_INBOX_TESTING_BORROWED_INBOX_SUITE_H_
#define IDEM_INBOX_TESTING_BORROWED_INBOX_SUITE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "store/testing/caller_connection.h"

namespace idem::testing {

// An application's connection to a database holding idem's schema and a table `totals`.
class BorrowedInboxTest : public ::testing::TestWithParam<CallerFactory> {
 protected:
  void SetUp() override;
  // The application's consumer: its own BEGIN, ConsumeOnce on the borrowed transaction, its own
  // write on its own connection the first time, then its own COMMIT (or ROLLBACK).
  absl::StatusOr<bool> Consume(const std::string& id, int64_t cents, bool commit = true);
  int64_t Count(const std::string& table);
  int64_t Total();

  std::unique_ptr<CallerConnection> conn_;
};

// An application's connection to a database without idem's schema.
class BorrowedInboxWithoutSchemaTest : public ::testing::TestWithParam<CallerFactory> {};

}  // namespace idem::testing

#endif  // IDEM_INBOX_TESTING_BORROWED_INBOX_SUITE_H_
