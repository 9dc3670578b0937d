// A bucket's Raft leader SIGKILLed in the middle of a run and restarted later, on the private
// "nats_quorum" cluster: 16 workers, two per key, claim and complete 400 keys with an effect
// counter, retrying whatever is Unavailable. Afterwards every key is completed, its effect ran
// exactly once, and its stored outcome is the one its single effect produced.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
using testing::MakeClaim;
using testing::MakeScope;

constexpr int kKeys = 400;
constexpr int kWorkers = 16;

StoredResponse Outcome(int worker) { return {201, {}, "worker-" + std::to_string(worker)}; }

// Runs key `k` to completion as `worker`: returns false only past the deadline.
bool RunKey(Store& store, int worker, int k, std::vector<std::atomic<int>>& effects,
            std::chrono::steady_clock::time_point deadline) {
  const Scope scope = MakeScope("key-" + std::to_string(k));
  const std::string me = "worker-" + std::to_string(worker);
  while (std::chrono::steady_clock::now() < deadline) {
    auto claim = store.Claim(MakeClaim(scope, me, testing::kFingerprint, 10min));
    if (!claim.ok()) {  // Unavailable: the cluster is electing; try again shortly
      std::this_thread::sleep_for(5ms);
      continue;
    }
    const KeyRecord& record = claim->record;
    if (record.state != KeyState::kInProgress) return true;  // finished by someone
    // Won now, or won by an earlier attempt whose answer was lost: either way, ours to run.
    if (!claim->claimed && record.owner != me) {  // the other worker's: wait for its outcome
      std::this_thread::sleep_for(5ms);
      continue;
    }
    ++effects[k];
    while (std::chrono::steady_clock::now() < deadline) {
      const absl::Status done = store.Complete(scope, record.fence, Outcome(worker));
      if (done.ok()) return true;
      if (!absl::IsUnavailable(done)) {
        // An earlier attempt that went through reports Aborted now: check it was ours.
        auto got = store.Get(scope);
        return got.ok() && got->response == Outcome(worker);
      }
    }
  }
  return false;
}

TEST(NatsKilledLeader, EveryKeyRunsItsEffectOnceThroughALeaderKillAndRestart) {
  absl::StatusOr<std::string> uri = natstest::StoreUri(
      natstest::Fixture::kCluster, "replicas=3&bucket=" + natstest::FreshBucket("killed"));
  ASSERT_TRUE(uri.ok()) << uri.status();
  StoreOptions options;
  options.lock_timeout = 2s;
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < 2; ++i) {  // two handles, as two processes would have
    // The cluster may still be recovering from the test before: wait until it serves.
    absl::StatusOr<std::unique_ptr<Store>> store = absl::UnknownError("not opened");
    ASSERT_TRUE(natstest::Eventually(
        [&] {
          store = OpenStore(*uri, options);
          return store.ok();
        },
        60s))
        << store.status();
    stores.push_back(*std::move(store));
  }
  auto admin = natstest::Connect(*natstest::ServerUrls(natstest::Fixture::kCluster));
  ASSERT_TRUE(admin.ok()) << admin.status();
  const std::string stream = "KV_" + uri->substr(uri->find("bucket=") + 7);
  std::string name;
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        jsStreamInfo* info = nullptr;
        if (js_GetStreamInfo(&info, (*admin)->js(), stream.c_str(), nullptr, nullptr) == NATS_OK &&
            info->Cluster != nullptr && info->Cluster->Leader != nullptr) {
          name = info->Cluster->Leader;
        }
        jsStreamInfo_Destroy(info);
        return name.rfind("idem-n", 0) == 0;
      },
      60s));
  const int leader = std::stoi(name.substr(6));

  std::vector<std::atomic<int>> effects(kKeys);
  std::atomic<int> finished{0}, failed{0};
  const auto deadline = std::chrono::steady_clock::now() + 180s;
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      for (int k = w % (kWorkers / 2); k < kKeys; k += kWorkers / 2) {
        if (RunKey(*stores[w % 2], w, k, effects, deadline)) {
          ++finished;
        } else {
          ++failed;
        }
      }
    });
  }
  // Kill the leader once a quarter of the work is done; restart it at three quarters (or when
  // the survivors have carried the run that far).
  while (finished < kKeys / 2 && failed == 0) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "kill-node", leader).ok());
  while (finished < kKeys * 3 / 2 && failed == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  ASSERT_TRUE(natstest::RunFixture(natstest::Fixture::kCluster, "start-node", leader).ok());
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(failed.load(), 0);
  for (int k = 0; k < kKeys; ++k) {
    EXPECT_EQ(effects[k].load(), 1) << "key-" << k;
    auto got = stores[0]->Get(MakeScope("key-" + std::to_string(k)));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(got->state, KeyState::kCompleted) << k;
    EXPECT_EQ(got->response, Outcome(std::stoi(got->owner.substr(7)))) << k;
  }
}

}  // namespace
}  // namespace idem
