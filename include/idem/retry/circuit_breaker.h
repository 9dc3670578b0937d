// idem/retry/circuit_breaker.h: stop calling a dependency that keeps failing, then probe it.
//
// States (docs/retries.md):
//   closed     calls pass; outcomes are counted. It opens when, in failure-rate mode, at least
//              `minimum_calls` of the last `window_size` calls were made and the failed share
//              reaches `failure_rate_threshold`; in consecutive mode, after
//              `consecutive_failures` failures in a row.
//   open       calls are refused (Unavailable) until `open_for` has passed on the clock.
//   half-open  at most `half_open_probes` calls pass; any failure re-opens the circuit, and
//              `half_open_probes` successes close it with a fresh count.
// Each Permit remembers the state period it was issued in; an outcome reported after the state
// changed is ignored, so a slow call from before an opening cannot close the circuit.
//
// Thread-safety: all methods are safe to call from any thread at once.
#ifndef IDEM_RETRY_CIRCUIT_BREAKER_H_
#define IDEM_RETRY_CIRCUIT_BREAKER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::retry {

enum class BreakerState { kClosed, kOpen, kHalfOpen };

// Returns "closed", "open" or "half-open".
std::string_view BreakerStateName(BreakerState state);

struct CircuitBreakerOptions {
  enum class Mode { kFailureRate, kConsecutiveFailures };
  Mode mode = Mode::kFailureRate;       // default: failure rate over a sliding window
  double failure_rate_threshold = 0.5;  // default 50 %; in (0, 1]
  int window_size = 100;                // default: the last 100 calls
  int minimum_calls = 20;               // default 20; no opening on fewer calls
  int consecutive_failures = 5;         // default 5; consecutive mode only
  Millis open_for{30'000};              // default 30 s before probing
  int half_open_probes = 3;             // default 3 probes at once, 3 successes to close
};

class CircuitBreaker final {
 public:
  // Proof that a call was let through; hand it back with the call's outcome.
  struct Permit {
    uint64_t generation = 0;
  };

  // Returns a breaker reading `clock` (which must outlive it), or InvalidArgument for an option
  // out of range (threshold not in (0, 1], a count below 1, a negative open_for).
  static absl::StatusOr<std::unique_ptr<CircuitBreaker>> Create(
      const CircuitBreakerOptions& options, const Clock& clock);
  CircuitBreaker(const CircuitBreaker&) = delete;
  CircuitBreaker& operator=(const CircuitBreaker&) = delete;

  // Returns a permit when a call may go out now; Unavailable when the circuit is open or all
  // half-open probes are out (the message says how long until the next probe, when known).
  absl::StatusOr<Permit> Acquire();

  // Reports the outcome of the call `permit` let through.
  void RecordSuccess(const Permit& permit);
  void RecordFailure(const Permit& permit);

  // Returns the state now (an open circuit whose time is up reads as half-open).
  BreakerState state() const;

 private:
  CircuitBreaker(const CircuitBreakerOptions& options, const Clock& clock)
      : options_(options), clock_(clock) {}

  // All REQUIRE mu_ held.
  void Refresh() const;  // open -> half-open once open_for has passed
  void TransitionTo(BreakerState next) const;
  void RecordClosed(bool failed);
  void Record(const Permit& permit, bool failed);

  const CircuitBreakerOptions options_;
  const Clock& clock_;
  mutable std::mutex mu_;
  // Mutable so that the time-driven open -> half-open step can happen in state() too.
  mutable BreakerState state_ = BreakerState::kClosed;
  mutable uint64_t generation_ = 1;
  mutable int64_t opened_at_ = 0;
  mutable int probes_out_ = 0;
  mutable int probes_ok_ = 0;
  std::deque<bool> window_;  // true = failed; the last window_size calls while closed
  int window_failures_ = 0;
  int consecutive_ = 0;
};

}  // namespace idem::retry

#endif  // IDEM_RETRY_CIRCUIT_BREAKER_H_
