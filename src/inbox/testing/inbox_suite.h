// The inbox suite: TEST_P cases every store's test binary instantiates with its StoreFactory
// (src/inbox/inbox_sqlite_test.cc, tests/postgres/inbox_postgres_test.cc).
#ifndef IDEM_INBOX_TESTING_INBOX_SUITE_H_
#define IDEM_INBOX_TESTING_INBOX_SUITE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "idem/store.h"
#include "store/testing/store_conformance.h"

namespace idem::testing {

class InboxTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;
  // Consumes (source, id) and, the first time, adds `cents` to a total; commits or rolls back.
  absl::StatusOr<bool> Consume(const std::string& source, const std::string& id, int64_t cents,
                               bool commit = true);
  int64_t Total();

  ManualClock clock_;
  std::unique_ptr<Store> store_;
};

}  // namespace idem::testing

#endif  // IDEM_INBOX_TESTING_INBOX_SUITE_H_
