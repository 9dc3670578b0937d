// The store conformance suite, unchanged, on the NATS JetStream store over the three-node
// cluster (R=3 buckets): its lease-mode half (tests/nats/CMakeLists.txt leaves out the tests
// that open transactions, which this store does not have; nats_store_test checks that Begin()
// says so). Each test gets buckets of its own.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "idem/store.h"
#include "nats_test_support.h"
#include "store/testing/store_conformance.h"

namespace idem {
namespace {

testing::StoreFactory NatsClusterFactory() {
  auto uri = std::make_shared<std::string>();
  auto bucket = std::make_shared<std::string>();
  testing::StoreFactory factory;
  factory.name = "nats_cluster";
  factory.open_fresh =
      [uri, bucket](const StoreOptions& options) -> absl::StatusOr<std::unique_ptr<Store>> {
    *bucket = natstest::FreshBucket("conformance");
    absl::StatusOr<std::string> fresh =
        natstest::StoreUri(natstest::Fixture::kCluster, "replicas=3&bucket=" + *bucket);
    if (!fresh.ok()) return fresh.status();
    *uri = *fresh;
    return OpenStore(*uri, options);
  };
  factory.open_again = [uri](const StoreOptions& options) { return OpenStore(*uri, options); };
  factory.change_leader = [bucket] {
    return natstest::ChangeBucketLeader(natstest::Fixture::kCluster, *bucket);
  };
  factory.store_wide_fences = false;  // fences grow per key (docs/distributed-store.md, "Fences")
  return factory;
}

using testing::StoreConformanceTest;
INSTANTIATE_TEST_SUITE_P(Nats, StoreConformanceTest, ::testing::Values(NatsClusterFactory()),
                         testing::StoreFactoryName);
using testing::StoreLostAckTest;
INSTANTIATE_TEST_SUITE_P(Nats, StoreLostAckTest, ::testing::Values(NatsClusterFactory()),
                         testing::StoreFactoryName);

}  // namespace
}  // namespace idem
