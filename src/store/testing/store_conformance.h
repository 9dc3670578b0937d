// The one conformance suite every store must pass unchanged (value-parameterized).
//
// A backend instantiates it with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformanceTest,
//                            ::testing::Values(idem::testing::StoreFactory{"sqlite", &OpenFresh}),
//                            idem::testing::StoreFactoryName);
#ifndef IDEM_STORE_TESTING_STORE_CONFORMANCE_H_
#define IDEM_STORE_TESTING_STORE_CONFORMANCE_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "idem/store.h"

namespace idem::testing {

struct StoreFactory {
  std::string name;  // a test-name-safe label: letters, digits, underscores
  // Opens a store over an empty keyspace that no other test shares, with `options` (whose clock
  // is the test's ManualClock). Calling it again within one test opens another handle on the
  // same keyspace (a second process's view).
  std::function<absl::StatusOr<std::unique_ptr<Store>>(const StoreOptions& options)> open_fresh;
  std::function<absl::StatusOr<std::unique_ptr<Store>>(const StoreOptions& options)> open_again;
};

inline std::string StoreFactoryName(const ::testing::TestParamInfo<StoreFactory>& info) {
  return info.param.name;
}

class StoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {};

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_STORE_CONFORMANCE_H_
