// idem/retry/retry_budget.h: a retry budget, so a failing dependency is not retried to death.
//
// Every request deposits `ratio` of a token; every retry takes one whole token. Deposits expire
// after `window`, and a floor of `min_retries_per_second` tokens per second of the window is
// always there, so a quiet client can still retry a little. When a dependency fails broadly the
// deposits run out and retries stop, exactly when they would multiply its load (retry storms).
// Invariant: at every granted retry, retries in the window <= ratio * requests in the window
// + min_retries_per_second * window seconds. The window is counted in whole seconds of the clock.
//
// Thread-safety: all methods are safe to call from any thread at once.
#ifndef IDEM_RETRY_RETRY_BUDGET_H_
#define IDEM_RETRY_RETRY_BUDGET_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::retry {

struct RetryBudgetOptions {
  double ratio = 0.1;                  // default 10 % of requests may be retried
  double min_retries_per_second = 10;  // default 10 retries/s always allowed
  Millis window{10'000};               // default 10 s; rounded up to whole seconds
};

class RetryBudget final {
 public:
  // Returns a budget reading `clock` (which must outlive it), or InvalidArgument when ratio or
  // the floor is negative or the window is shorter than 1 s.
  static absl::StatusOr<std::unique_ptr<RetryBudget>> Create(const RetryBudgetOptions& options,
                                                             const Clock& clock);
  RetryBudget(const RetryBudget&) = delete;
  RetryBudget& operator=(const RetryBudget&) = delete;

  // Counts one request (a first attempt, not a retry).
  void RecordRequest();

  // Returns true and spends a token when a retry fits in the budget; false leaves it unchanged.
  bool TryAcquireRetry();

  // Requests and granted retries in the current window (for metrics and tests).
  int64_t requests_in_window() const;
  int64_t retries_in_window() const;

 private:
  struct Slot {
    int64_t second = -1;
    int64_t requests = 0;
    int64_t retries = 0;
  };
  RetryBudget(const RetryBudgetOptions& options, const Clock& clock, int seconds)
      : options_(options), clock_(clock), slots_(static_cast<size_t>(seconds)) {}

  Slot& CurrentSlot(int64_t second);                                    // REQUIRES: mu_ held
  void Sum(int64_t second, int64_t& requests, int64_t& retries) const;  // REQUIRES: mu_ held

  const RetryBudgetOptions options_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;  // ring indexed by second modulo its size
};

}  // namespace idem::retry

#endif  // IDEM_RETRY_RETRY_BUDGET_H_
