// Which store an end-to-end test binary runs its tests on. Such a binary is compiled once and
// registered with CTest once per store (cmake/IdemHelpers.cmake's idem_test_on_store): with
// IDEM_E2E_STORE=postgres or IDEM_E2E_STORE=nats in the environment of that store's registration;
// unset, it runs on SQLite. A binary can run on PostgreSQL only if it was built with
// IDEM_TEST_WITH_POSTGRES (it links idem::pg_test_support), on NATS only with IDEM_TEST_WITH_NATS
// (idem::nats_test_support); a test asked for another store fails, it never skips.
#ifndef IDEM_TESTS_CLI_E2E_STORE_H_
#define IDEM_TESTS_CLI_E2E_STORE_H_

#include <gtest/gtest.h>

#include <string_view>

#include "absl/status/statusor.h"

namespace idem::testing {

enum class E2eStore { kSqlite, kPostgres, kNats };

// The store IDEM_E2E_STORE names: kSqlite when it is unset or empty, "sqlite", "postgres" or
// "nats"; InvalidArgument naming the value for anything else.
absl::StatusOr<E2eStore> E2eStoreFromEnvironment();

// "sqlite", "postgres" or "nats".
std::string_view E2eStoreName(E2eStore store);

// Fixture F for tests of store kOnly alone: its suite is run by that store's registration only,
// and a test of it run on another store fails. F keeps the store it runs on in on_.
template <typename F, E2eStore kOnly>
class OnlyOn : public F {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(F::SetUp());
    ASSERT_EQ(this->on_, kOnly) << "a test of " << E2eStoreName(kOnly) << " run on "
                                << E2eStoreName(this->on_);
  }
};

}  // namespace idem::testing

#endif  // IDEM_TESTS_CLI_E2E_STORE_H_
