// The guard in a transaction the application opened on its own connection (RunOnceIn on a
// borrowed transaction, idem/borrowed_transaction.h): TEST_P cases every store's test binary
// instantiates with its CallerFactory (src/guard/guard_sqlite_test.cc,
// tests/postgres/postgres_guard_suite_test.cc).
#ifndef IDEM_GUARD_TESTING_BORROWED_GUARD_SUITE_H_
#define IDEM_GUARD_TESTING_BORROWED_GUARD_SUITE_H_

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/guard.h"
#include "store/testing/caller_connection.h"

namespace idem::testing {

// An application's connection to a database holding idem's schema, a table `orders` for the
// application's own writes and a table `effects` for the guarded effect's.
class BorrowedGuardTest : public ::testing::TestWithParam<CallerFactory> {
 protected:
  void SetUp() override;

  // One arrival as the application handles it: its own BEGIN, its own write of order `order`,
  // RunOnceIn with an effect that writes a row and answers `status`, then its own COMMIT
  // (whatever RunOnceIn returned, unless `commit` is false: ROLLBACK).
  absl::StatusOr<GuardResult> Arrive(const std::string& order, const std::string& fingerprint,
                                     int status, bool commit = true) {
    return ArriveOn(*conn_, order, fingerprint, status, commit);
  }
  // Arrive, on another connection of the application's.
  absl::StatusOr<GuardResult> ArriveOn(CallerConnection& conn, const std::string& order,
                                       const std::string& fingerprint, int status,
                                       bool commit = true);
  int64_t Count(const std::string& table);

  ManualClock clock_;
  std::unique_ptr<CallerConnection> conn_;
  Scope scope_{"tenant-a", "key-1"};
  std::atomic<int> effect_runs_{0};
};

}  // namespace idem::testing

#endif  // IDEM_GUARD_TESTING_BORROWED_GUARD_SUITE_H_
