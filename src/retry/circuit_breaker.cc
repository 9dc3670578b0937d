#include "idem/retry/circuit_breaker.h"

#include <fmt/format.h>

#include "absl/status/status.h"

namespace idem::retry {

std::string_view BreakerStateName(BreakerState state) {
  switch (state) {
    case BreakerState::kClosed:
      return "closed";
    case BreakerState::kOpen:
      return "open";
    case BreakerState::kHalfOpen:
      return "half-open";
  }
  return "unknown";
}

absl::StatusOr<std::unique_ptr<CircuitBreaker>> CircuitBreaker::Create(
    const CircuitBreakerOptions& options, const Clock& clock) {
  if (!(options.failure_rate_threshold > 0 && options.failure_rate_threshold <= 1)) {
    return absl::InvalidArgumentError(fmt::format(
        "failure_rate_threshold must be in (0, 1], got {}", options.failure_rate_threshold));
  }
  if (options.window_size < 1 || options.minimum_calls < 1 || options.consecutive_failures < 1 ||
      options.half_open_probes < 1) {
    return absl::InvalidArgumentError(
        "window_size, minimum_calls, consecutive_failures and half_open_probes must be at least 1");
  }
  if (options.open_for.count() < 0) {
    return absl::InvalidArgumentError("open_for must not be negative");
  }
  return std::unique_ptr<CircuitBreaker>(new CircuitBreaker(options, clock));
}

void CircuitBreaker::TransitionTo(BreakerState next) const {
  state_ = next;
  ++generation_;
  probes_out_ = 0;
  probes_ok_ = 0;
  if (next == BreakerState::kOpen) opened_at_ = clock_.NowMillis();
}

void CircuitBreaker::Refresh() const {
  if (state_ == BreakerState::kOpen &&
      clock_.NowMillis() - opened_at_ >= options_.open_for.count()) {
    TransitionTo(BreakerState::kHalfOpen);
  }
}

absl::StatusOr<CircuitBreaker::Permit> CircuitBreaker::Acquire() {
  std::lock_guard<std::mutex> lock(mu_);
  Refresh();
  switch (state_) {
    case BreakerState::kClosed:
      return Permit{generation_};
    case BreakerState::kOpen: {
      const int64_t wait = opened_at_ + options_.open_for.count() - clock_.NowMillis();
      return absl::UnavailableError(
          fmt::format("circuit breaker open: calls refused for another {} ms", wait));
    }
    case BreakerState::kHalfOpen:
      if (probes_out_ + probes_ok_ >= options_.half_open_probes) {
        return absl::UnavailableError(
            "circuit breaker half-open: all probe calls are out; wait for their outcome");
      }
      ++probes_out_;
      return Permit{generation_};
  }
  return absl::InternalError("circuit breaker in an unknown state");
}

void CircuitBreaker::RecordClosed(bool failed) {
  window_.push_back(failed);
  window_failures_ += failed ? 1 : 0;
  if (static_cast<int>(window_.size()) > options_.window_size) {
    window_failures_ -= window_.front() ? 1 : 0;
    window_.pop_front();
  }
  consecutive_ = failed ? consecutive_ + 1 : 0;
  bool open = false;
  if (options_.mode == CircuitBreakerOptions::Mode::kConsecutiveFailures) {
    open = consecutive_ >= options_.consecutive_failures;
  } else {
    const auto calls = static_cast<int>(window_.size());
    open = calls >= options_.minimum_calls &&
           static_cast<double>(window_failures_) >=
               options_.failure_rate_threshold * static_cast<double>(calls);
  }
  if (open) {
    window_.clear();
    window_failures_ = 0;
    consecutive_ = 0;
    TransitionTo(BreakerState::kOpen);
  }
}

void CircuitBreaker::Record(const Permit& permit, bool failed) {
  std::lock_guard<std::mutex> lock(mu_);
  Refresh();
  if (permit.generation != generation_) return;  // issued before the last change of state
  if (state_ == BreakerState::kClosed) {
    RecordClosed(failed);
  } else if (state_ == BreakerState::kHalfOpen) {
    if (failed) {
      TransitionTo(BreakerState::kOpen);
      return;
    }
    --probes_out_;
    if (++probes_ok_ >= options_.half_open_probes) TransitionTo(BreakerState::kClosed);
  }
}

void CircuitBreaker::RecordSuccess(const Permit& permit) { Record(permit, false); }
void CircuitBreaker::RecordFailure(const Permit& permit) { Record(permit, true); }

BreakerState CircuitBreaker::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  Refresh();
  return state_;
}

}  // namespace idem::retry
