// Two recoverers on one store at once (two handles, as two processes would open it): both list
// the same lapsed claims before either takes one over, and still no key is resolved twice.
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "guard/testing/lease_recoverer_suite.h"

namespace idem::testing {
namespace {

// Holds each pass at its first claim until `parties` passes have listed theirs (bounded).
class StartTogether {
 public:
  explicit StartTogether(int parties) : waiting_(parties) {}
  bool Arrive() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--waiting_ <= 0) all_.notify_all();
    return all_.wait_for(lock, std::chrono::seconds(20), [&] { return waiting_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable all_;
  int waiting_;
};

TEST_P(LeaseRecovererTest, TwoRecoverersAtOnceNeverResolveOneKeyTwice) {
  constexpr int kKeys = 16;
  LeaseGuard guard(*store_, GuardOptions("dies"));
  std::vector<LeasedKey> dead;
  for (int i = 0; i < kKeys; ++i) {
    std::optional<LeasedKey> key = Claim(guard, {"", "race-" + std::to_string(i)}, Note("x"));
    ASSERT_TRUE(key.has_value());
    dead.push_back(*std::move(key));
  }
  clock_.Advance(kLease + 1ms);
  std::unique_ptr<Store> other_store = OpenOrDie();
  ASSERT_NE(other_store, nullptr);

  StartTogether start(2);
  std::mutex mu;
  std::map<std::string, int> resolved;  // key -> resolver calls
  auto run = [&](Store& store, const std::string& owner, absl::StatusOr<RecoveryReport>* out) {
    RecoverOptions options = Options();
    options.owner = owner;
    bool arrived = false;
    options.filter = [&](const KeyRecord&) {
      if (!arrived) arrived = start.Arrive();
      return true;
    };
    LeaseRecoverer recoverer(store, options);
    *out = recoverer.RecoverLapsedOnce([&](const LapsedClaim& claim) {
      std::lock_guard<std::mutex> lock(mu);
      ++resolved[claim.scope.key];
      return Resolution::Completed(
          StoredResponse{.status = 200, .body = owner + " resolved " + claim.scope.key});
    });
  };
  absl::StatusOr<RecoveryReport> a, b;
  std::thread first(run, std::ref(*store_), "a", &a);
  std::thread second(run, std::ref(*other_store), "b", &b);
  first.join();
  second.join();
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->lapsed, kKeys);  // both listed every claim
  EXPECT_EQ(b->lapsed, kKeys);
  EXPECT_EQ(a->completed + b->completed, kKeys);
  EXPECT_EQ(a->skipped + b->skipped, kKeys);
  EXPECT_EQ(resolved.size(), static_cast<size_t>(kKeys));
  for (const auto& [key, calls] : resolved) EXPECT_EQ(calls, 1) << key;
  for (int i = 0; i < kKeys; ++i) {
    auto record = store_->Get({"", "race-" + std::to_string(i)});
    ASSERT_TRUE(record.ok()) << record.status();
    EXPECT_EQ(record->state, KeyState::kCompleted);
    EXPECT_EQ(dead[i].Finish(ok_).status().code(), absl::StatusCode::kAborted);
  }
  std::cerr << "resolved by a: " << a->completed << ", by b: " << b->completed << "\n";
}

}  // namespace
}  // namespace idem::testing
