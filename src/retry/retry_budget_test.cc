#include "idem/retry/retry_budget.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>
#include <vector>

namespace idem::retry {
namespace {

std::unique_ptr<RetryBudget> Budget(const Clock& clock, double ratio, double floor, int64_t win) {
  return *RetryBudget::Create({ratio, floor, Millis(win)}, clock);
}

TEST(RetryBudget, WithoutFloorAllowsExactlyTheRatioOfRequests) {
  ManualClock clock;
  auto budget = Budget(clock, 0.1, 0, 10'000);
  for (int i = 0; i < 100; ++i) budget->RecordRequest();
  int granted = 0;
  while (budget->TryAcquireRetry()) ++granted;
  EXPECT_EQ(granted, 10);
}

TEST(RetryBudget, FloorAllowsRetriesWithNoRequests) {
  ManualClock clock;
  auto budget = Budget(clock, 0.1, 2, 5000);  // 2/s over 5 s: 10 tokens
  int granted = 0;
  while (budget->TryAcquireRetry()) ++granted;
  EXPECT_EQ(granted, 10);
}

TEST(RetryBudget, DepositsExpireAfterTheWindow) {
  ManualClock clock;
  auto budget = Budget(clock, 0.5, 0, 2000);
  for (int i = 0; i < 10; ++i) budget->RecordRequest();
  clock.Advance(Millis(2000));
  EXPECT_FALSE(budget->TryAcquireRetry());
  EXPECT_EQ(budget->requests_in_window(), 0);
}

// The rule the budget exists for: at every granted retry, retries in the window stay within
// ratio * requests + floor * window seconds, whatever the mix of traffic and failures.
TEST(RetryBudget, RetriesNeverExceedRatioPlusFloorOverTheWindow) {
  ManualClock clock(0);
  constexpr double kRatio = 0.1;
  constexpr double kFloor = 1;
  constexpr int kWindowSeconds = 10;
  auto budget = Budget(clock, kRatio, kFloor, kWindowSeconds * 1000);
  std::mt19937_64 rng(3);
  std::vector<int64_t> requests(1000, 0);
  std::vector<int64_t> retries(1000, 0);
  int64_t granted_total = 0;
  for (int step = 0; step < 60'000; ++step) {
    clock.Advance(Millis(rng() % 20));
    const int64_t second = clock.NowMillis() / 1000;
    ASSERT_LT(second, 1000);
    budget->RecordRequest();
    ++requests[second];
    // A broadly failing dependency: every request wants three retries.
    for (int r = 0; r < 3; ++r) {
      if (!budget->TryAcquireRetry()) break;
      ++retries[second];
      ++granted_total;
      int64_t req_w = 0;
      int64_t ret_w = 0;
      for (int64_t s = std::max<int64_t>(0, second - kWindowSeconds + 1); s <= second; ++s) {
        req_w += requests[s];
        ret_w += retries[s];
      }
      ASSERT_LE(static_cast<double>(ret_w),
                kRatio * static_cast<double>(req_w) + kFloor * kWindowSeconds + 1e-6);
    }
  }
  EXPECT_GT(granted_total, 0);
}

TEST(RetryBudget, IsSafeUnderConcurrentUse) {
  ManualClock clock;
  auto budget = Budget(clock, 0.1, 0, 10'000);
  std::vector<std::thread> threads;
  std::atomic<int> granted{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) {
        budget->RecordRequest();
        if (budget->TryAcquireRetry()) ++granted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(granted.load(), 400);
  EXPECT_EQ(budget->requests_in_window(), 4000);
  EXPECT_EQ(budget->retries_in_window(), granted.load());
}

TEST(RetryBudget, RejectsNegativeRatioAndSubSecondWindow) {
  ManualClock clock;
  EXPECT_EQ(RetryBudget::Create({-0.1, 0, Millis(1000)}, clock).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RetryBudget::Create({0.1, 0, Millis(999)}, clock).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::retry
