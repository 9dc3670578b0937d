// idem/retry/retrier.h: the retry loop that puts policy, backoff, budget and breaker together.
//
// RunWithRetries makes the first attempt, asks the policy what follows, checks the budget before
// every retry and the breaker before every attempt, waits the decided delay on an injected
// Sleeper, and stops with the reason (StopReason). The attempt itself (an HTTP call, a database
// statement...) is the caller's function; it receives the time it may take.
//
// Thread-safety: RunWithRetries runs on the calling thread; the budget and breaker it is given
// may be shared with other threads, the Backoff may not.
#ifndef IDEM_RETRY_RETRIER_H_
#define IDEM_RETRY_RETRIER_H_

#include <functional>

#include "idem/clock.h"
#include "idem/retry/backoff.h"
#include "idem/retry/circuit_breaker.h"
#include "idem/retry/retry_budget.h"
#include "idem/retry/retry_policy.h"

namespace idem::retry {

// Waits between attempts; injected so that tests advance a ManualClock instead of sleeping.
class Sleeper {
 public:
  virtual ~Sleeper() = default;
  virtual void SleepFor(Millis duration) = 0;
};

// Returns a Sleeper that really sleeps. Never null; lives for the whole process.
Sleeper& RealSleeper();

// A Sleeper for tests: moves `clock` forward instead of waiting.
class ManualSleeper final : public Sleeper {
 public:
  explicit ManualSleeper(ManualClock& clock) : clock_(clock) {}
  void SleepFor(Millis duration) override { clock_.Advance(duration); }

 private:
  ManualClock& clock_;
};

struct AttemptContext {
  int attempt = 1;    // 1-based
  Millis timeout{0};  // the time this attempt may take; 0 = unbounded
};

// What the observer hears after every attempt.
struct AttemptReport {
  int attempt = 1;
  AttemptResult result;
  Millis took{0};     // how long the attempt ran
  Decision decision;  // kRetry with the delay before the next attempt, or why it stopped
};

struct RetryOutcome {
  AttemptResult last;  // the last attempt's result (kNotSent when none went out)
  int attempts = 0;    // attempts that went out
  StopReason reason = StopReason::kSucceeded;
  Millis elapsed{0};  // from the first attempt's start to the stop
};

// The parts of one retry loop. policy, backoff, clock and sleeper are required; budget and
// breaker are optional (null: not used). All must outlive the call.
struct RetrierParts {
  const RetryPolicy* policy = nullptr;
  Backoff* backoff = nullptr;
  const Clock* clock = nullptr;
  Sleeper* sleeper = nullptr;
  RetryBudget* budget = nullptr;
  CircuitBreaker* breaker = nullptr;
};

using AttemptFn = std::function<AttemptResult(const AttemptContext&)>;
using AttemptObserver = std::function<void(const AttemptReport&)>;

// Runs `attempt` until the policy, budget, breaker or deadline stops it; returns how it ended.
// `observe` (may be empty) is called after every attempt, before any wait.
RetryOutcome RunWithRetries(const RetrierParts& parts, const RequestTraits& request,
                            const AttemptFn& attempt, const AttemptObserver& observe = {});

}  // namespace idem::retry

#endif  // IDEM_RETRY_RETRIER_H_
