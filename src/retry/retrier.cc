#include "idem/retry/retrier.h"

#include <thread>

namespace idem::retry {
namespace {

class ThreadSleeper final : public Sleeper {
 public:
  void SleepFor(Millis duration) override {
    if (duration.count() > 0) std::this_thread::sleep_for(duration);
  }
};

Millis Since(const Clock& clock, int64_t start) { return Millis(clock.NowMillis() - start); }

// Returns false when a breaker is given and refuses the attempt; else fills `permit`.
bool Admit(CircuitBreaker* breaker, CircuitBreaker::Permit& permit) {
  if (breaker == nullptr) return true;
  absl::StatusOr<CircuitBreaker::Permit> acquired = breaker->Acquire();
  if (!acquired.ok()) return false;
  permit = *acquired;
  return true;
}

void RecordOutcome(CircuitBreaker* breaker, const CircuitBreaker::Permit& permit,
                   const AttemptResult& result) {
  if (breaker == nullptr) return;
  if (IsTransientFailure(result)) {
    breaker->RecordFailure(permit);
  } else {
    breaker->RecordSuccess(permit);
  }
}

}  // namespace

Sleeper& RealSleeper() {
  static ThreadSleeper sleeper;
  return sleeper;
}

RetryOutcome RunWithRetries(const RetrierParts& parts, const RequestTraits& request,
                            const AttemptFn& attempt, const AttemptObserver& observe) {
  const Clock& clock = *parts.clock;
  const int64_t start = clock.NowMillis();
  RetryOutcome outcome;
  if (parts.budget != nullptr) parts.budget->RecordRequest();
  for (int n = 1;; ++n) {
    AttemptReport report;
    report.attempt = n;
    CircuitBreaker::Permit permit;
    if (!Admit(parts.breaker, permit)) {
      report.decision = {StopReason::kCircuitOpen, Millis(0)};
      if (observe) observe(report);
      outcome.reason = StopReason::kCircuitOpen;
      if (outcome.attempts == 0) outcome.last = report.result;
      break;
    }
    const int64_t attempt_start = clock.NowMillis();
    report.result = attempt({n, parts.policy->AttemptTimeout(Since(clock, start))});
    report.took = Since(clock, attempt_start);
    outcome.attempts = n;
    outcome.last = report.result;
    RecordOutcome(parts.breaker, permit, report.result);
    report.decision = parts.policy->Decide(request, report.result, n, Since(clock, start),
                                           parts.backoff->NextDelay());
    if (report.decision.retry() && parts.budget != nullptr && !parts.budget->TryAcquireRetry()) {
      report.decision = {StopReason::kBudget, Millis(0)};
    }
    if (observe) observe(report);
    if (!report.decision.retry()) {
      outcome.reason = report.decision.reason;
      break;
    }
    parts.sleeper->SleepFor(report.decision.delay);
  }
  outcome.elapsed = Since(clock, start);
  return outcome;
}

}  // namespace idem::retry
