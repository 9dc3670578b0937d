// How much a retry decision costs: a backoff delay, a budget check, a breaker permit, a policy
// verdict. Each runs on a ManualClock so only the computation is measured.
#include <benchmark/benchmark.h>

#include "idem/retry/backoff.h"
#include "idem/retry/circuit_breaker.h"
#include "idem/retry/retry_budget.h"
#include "idem/retry/retry_policy.h"

namespace idem::retry {
namespace {

void BM_BackoffNextDelay(benchmark::State& state) {
  const auto jitter = static_cast<Jitter>(state.range(0));
  Backoff backoff = *Backoff::Create({jitter, Millis(100), Millis(20'000)}, 42);
  for (auto _ : state) {
    if (backoff.retries() >= 16) backoff.Reset();
    benchmark::DoNotOptimize(backoff.NextDelay());
  }
  state.SetLabel(std::string(JitterName(jitter)));
}
BENCHMARK(BM_BackoffNextDelay)->DenseRange(0, 3);

// One request and one retry attempt against the budget (two lock acquisitions).
void BM_BudgetRequestAndRetryDecision(benchmark::State& state) {
  ManualClock clock;
  auto budget = *RetryBudget::Create({}, clock);
  int64_t n = 0;
  for (auto _ : state) {
    if (++n % 1024 == 0) clock.Advance(Millis(1));
    budget->RecordRequest();
    benchmark::DoNotOptimize(budget->TryAcquireRetry());
  }
}
BENCHMARK(BM_BudgetRequestAndRetryDecision);
BENCHMARK(BM_BudgetRequestAndRetryDecision)->Threads(2);

// A permit and its recorded outcome on a closed breaker (failure-rate mode, 10 % failures).
void BM_BreakerAcquireAndRecord(benchmark::State& state) {
  ManualClock clock;
  CircuitBreakerOptions options;
  auto breaker = *CircuitBreaker::Create(options, clock);
  int64_t n = 0;
  for (auto _ : state) {
    auto permit = breaker->Acquire();
    if (permit.ok()) {
      if (++n % 10 == 0) {
        breaker->RecordFailure(*permit);
      } else {
        breaker->RecordSuccess(*permit);
      }
    }
  }
}
BENCHMARK(BM_BreakerAcquireAndRecord);
BENCHMARK(BM_BreakerAcquireAndRecord)->Threads(2);

void BM_PolicyDecide(benchmark::State& state) {
  const RetryPolicy policy =
      *RetryPolicy::Create({4, Millis(10'000), Millis(2000), Millis(60'000)});
  const AttemptResult result{AttemptResult::Kind::kResponse, 503, Millis(300), false};
  for (auto _ : state) {
    benchmark::DoNotOptimize(policy.Decide({"POST", true}, result, 2, Millis(1500), Millis(200)));
  }
}
BENCHMARK(BM_PolicyDecide);

}  // namespace
}  // namespace idem::retry

BENCHMARK_MAIN();
