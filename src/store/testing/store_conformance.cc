#include "store/testing/store_conformance.h"

namespace idem::testing {

StoreConformanceTest::StoreConformanceTest() {
  options_.clock = &clock_;
  options_.retention = std::chrono::hours(24);
  options_.lock_timeout = std::chrono::seconds(30);
}

void StoreConformanceTest::SetUp() {
  absl::StatusOr<std::unique_ptr<Store>> store = GetParam().open_fresh(options_);
  ASSERT_TRUE(store.ok()) << "open_fresh failed: " << store.status();
  store_ = *std::move(store);
}

}  // namespace idem::testing
