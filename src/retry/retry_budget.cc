#include "idem/retry/retry_budget.h"

#include <fmt/format.h>

#include "absl/status/status.h"

namespace idem::retry {
namespace {

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

absl::StatusOr<std::unique_ptr<RetryBudget>> RetryBudget::Create(const RetryBudgetOptions& options,
                                                                 const Clock& clock) {
  if (!(options.ratio >= 0) || !(options.min_retries_per_second >= 0)) {
    return absl::InvalidArgumentError(
        fmt::format("retry budget ratio ({}) and floor ({}/s) must not be negative", options.ratio,
                    options.min_retries_per_second));
  }
  if (options.window < Millis(1000)) {
    return absl::InvalidArgumentError(
        fmt::format("retry budget window must be at least 1s, got {} ms", options.window.count()));
  }
  const auto seconds = static_cast<int>((options.window.count() + 999) / 1000);
  return std::unique_ptr<RetryBudget>(new RetryBudget(options, clock, seconds));
}

RetryBudget::Slot& RetryBudget::CurrentSlot(int64_t second) {
  const auto n = static_cast<int64_t>(slots_.size());
  Slot& slot = slots_[static_cast<size_t>(((second % n) + n) % n)];
  if (slot.second != second) slot = Slot{second, 0, 0};
  return slot;
}

void RetryBudget::Sum(int64_t second, int64_t& requests, int64_t& retries) const {
  const auto n = static_cast<int64_t>(slots_.size());
  requests = 0;
  retries = 0;
  for (const Slot& slot : slots_) {
    if (slot.second > second - n && slot.second <= second) {
      requests += slot.requests;
      retries += slot.retries;
    }
  }
}

void RetryBudget::RecordRequest() {
  const int64_t second = FloorDiv(clock_.NowMillis(), 1000);
  std::lock_guard<std::mutex> lock(mu_);
  ++CurrentSlot(second).requests;
}

bool RetryBudget::TryAcquireRetry() {
  const int64_t second = FloorDiv(clock_.NowMillis(), 1000);
  std::lock_guard<std::mutex> lock(mu_);
  Slot& slot = CurrentSlot(second);
  int64_t requests = 0;
  int64_t retries = 0;
  Sum(second, requests, retries);
  const double allowed = options_.ratio * static_cast<double>(requests) +
                         options_.min_retries_per_second * static_cast<double>(slots_.size());
  // The epsilon keeps 0.1 * 30 from rounding below 3 tokens.
  if (static_cast<double>(retries + 1) > allowed + 1e-9) return false;
  ++slot.retries;
  return true;
}

int64_t RetryBudget::requests_in_window() const {
  const int64_t second = FloorDiv(clock_.NowMillis(), 1000);
  std::lock_guard<std::mutex> lock(mu_);
  int64_t requests = 0;
  int64_t retries = 0;
  Sum(second, requests, retries);
  return requests;
}

int64_t RetryBudget::retries_in_window() const {
  const int64_t second = FloorDiv(clock_.NowMillis(), 1000);
  std::lock_guard<std::mutex> lock(mu_);
  int64_t requests = 0;
  int64_t retries = 0;
  Sum(second, requests, retries);
  return retries;
}

}  // namespace idem::retry
