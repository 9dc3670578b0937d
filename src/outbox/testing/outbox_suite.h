// The outbox suite: TEST_P cases every store's test binary instantiates with its StoreFactory
// (src/outbox/outbox_sqlite_test.cc, tests/postgres/outbox_postgres_test.cc), as the store
// conformance suite. Each test gets a fresh store with an effects table.
#ifndef IDEM_OUTBOX_TESTING_OUTBOX_SUITE_H_
#define IDEM_OUTBOX_TESTING_OUTBOX_SUITE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "idem/clock.h"
#include "idem/outbox.h"
#include "idem/outbox_admin.h"
#include "idem/store.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {

class OutboxTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;

  // Runs `sql` in a transaction of its own and commits; fails the test on error.
  void Exec(const std::string& sql, std::vector<SqlValue> params = {});
  // Adds `message` in a transaction of its own, commits, and returns its id.
  std::string AddCommitted(const OutboxMessage& message);
  // All messages, in seq order (payloads not included).
  std::vector<OutboxRecord> All();

  ManualClock clock_;
  std::unique_ptr<Store> store_;
};

OutboxMessage SampleMessage(std::string aggregate = "order-1", std::string payload = "{}");

}  // namespace idem::testing

#endif  // IDEM_OUTBOX_TESTING_OUTBOX_SUITE_H_
