// ApplyLeaseBatch on the single-node fixture: a batch's writes go out together, published
// asynchronously from the calling thread; no thread is started for a batch.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idem/store.h"
#include "nats_test_support.h"
#include "store/testing/conformance_helpers.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using testing::MakeScope;
using testing::SampleResponse;

constexpr int kKeys = 64;

int Threads() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

TEST(NatsBatch, ABatchOfOutcomesStartsNoThreadAndEveryOutcomeIsStored) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kSingle, "replicas=1&bucket=" + natstest::FreshBucket("batch"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  auto store = OpenStore(*uri);
  ASSERT_TRUE(store.ok()) << store.status();
  std::vector<LeaseWrite> claims;
  for (int i = 0; i < kKeys; ++i) {
    claims.push_back({.kind = LeaseWrite::Kind::kClaim,
                      .scope = MakeScope("k" + std::to_string(i)),
                      .fingerprint = testing::kFingerprint,
                      .owner = "batch-test",
                      .lease = 30s});
  }
  auto claimed = (*store)->ApplyLeaseBatch(claims);  // libnats' own threads start here
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  std::vector<LeaseWrite> outcomes;
  for (const LeaseWriteResult& r : *claimed) {
    ASSERT_TRUE(r.status.ok() && r.claimed) << r.status;
    outcomes.push_back({.kind = LeaseWrite::Kind::kComplete,
                        .scope = r.record.scope,
                        .fence = r.record.fence,
                        .response = SampleResponse(201)});
  }
  // A watcher thread samples the process's threads while the batch runs.
  std::atomic<bool> running{true};
  std::atomic<int> most{0};
  std::thread watcher([&] {
    while (running) {
      most = std::max(most.load(), Threads());
      std::this_thread::sleep_for(100us);
    }
  });
  const int before = Threads();  // the watcher included
  auto completed = (*store)->ApplyLeaseBatch(outcomes);
  running = false;
  watcher.join();
  ASSERT_TRUE(completed.ok()) << completed.status();
  for (const LeaseWriteResult& r : *completed) EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(most.load(), before) << "the batch started " << most.load() - before << " threads";
  for (const LeaseWrite& w : outcomes) {
    auto record = (*store)->Get(w.scope);
    ASSERT_TRUE(record.ok()) << record.status();
    EXPECT_EQ(record->state, KeyState::kCompleted);
    EXPECT_EQ(record->response, SampleResponse(201));
  }
}

}  // namespace
}  // namespace idem
