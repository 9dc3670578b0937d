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
#include <ostream>
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
  // Optional: makes the keyspace's replicated log change leaders (JetStream: the bucket's stream
  // leader steps down) and returns once another one leads; unset where there is none.
  std::function<absl::Status()> change_leader;
  // Whether every fence comes from one store-wide counter, so that different keys never share
  // one (SQL stores); false where fences strictly grow per key only (JetStream).
  bool store_wide_fences = true;
};

// gtest prints a parameter in each test's listed name (and CTest keeps it): print the label,
// not the struct's bytes, so test names are short and the same on every run.
inline void PrintTo(const StoreFactory& factory, std::ostream* os) { *os << factory.name; }

inline std::string StoreFactoryName(const ::testing::TestParamInfo<StoreFactory>& info) {
  return info.param.name;
}

// Each test gets a fresh store (store_) over an empty keyspace, whose clock is clock_ and whose
// options are options_ (retention 24 h, lock_timeout 30 s so that waits end by commit or
// rollback, not by time).
class StoreConformanceTest : public ::testing::TestWithParam<StoreFactory> {
 protected:
  StoreConformanceTest();
  void SetUp() override;
  // A second handle on the same keyspace, as another process would open it.
  absl::StatusOr<std::unique_ptr<Store>> OpenAgain() { return GetParam().open_again(options_); }

  ManualClock clock_;
  StoreOptions options_;
  std::unique_ptr<Store> store_;
};

// The conformance suite's lost-acknowledgement cases (store_conformance_lost_ack.cc): a suite of
// their own, which every store instantiates beside StoreConformanceTest with the same factory.
// Apart so that a layer in front of a store that does not resolve lost acknowledgements itself
// (the gateway's key service) can run StoreConformanceTest alone.
class StoreLostAckTest : public StoreConformanceTest {};

}  // namespace idem::testing

#endif  // IDEM_STORE_TESTING_STORE_CONFORMANCE_H_
