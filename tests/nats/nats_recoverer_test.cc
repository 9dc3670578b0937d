// The lease recoverer suite (src/guard/testing/lease_recoverer_suite.h) on the NATS JetStream
// store over the three-node cluster (R=3 buckets), each test with buckets of its own.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "guard/testing/lease_recoverer_suite.h"
#include "idem/store.h"
#include "nats_test_support.h"

namespace idem {
namespace {

testing::StoreFactory NatsClusterFactory() {
  auto uri = std::make_shared<std::string>();
  testing::StoreFactory factory;
  factory.name = "nats_cluster";
  factory.open_fresh =
      [uri](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
    absl::StatusOr<std::string> fresh = natstest::StoreUri(
        natstest::Fixture::kCluster, "replicas=3&bucket=" + natstest::FreshBucket("recoverer"));
    if (!fresh.ok()) return fresh.status();
    *uri = *fresh;
    return OpenStore(*uri, options);
  };
  factory.open_again = [uri](const StoreOptions& options) { return OpenStore(*uri, options); };
  return factory;
}

using testing::LeaseRecovererTest;
INSTANTIATE_TEST_SUITE_P(Nats, LeaseRecovererTest, ::testing::Values(NatsClusterFactory()),
                         testing::StoreFactoryName);

}  // namespace
}  // namespace idem
