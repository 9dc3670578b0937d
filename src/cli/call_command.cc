// `idem call URL`: a curl-like client that retries safely (docs/idem-call.md).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/call_attempt.h"
#include "cli/call_options.h"
#include "cli/cli_output.h"
#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "idem/retry/circuit_breaker.h"
#include "idem/retry/deadline.h"
#include "idem/retry/duration.h"
#include "idem/retry/retrier.h"
#include "idem/retry/retry_budget.h"

namespace idem::cli {
namespace {

using retry::AttemptResult;
using retry::StopReason;
using Kind = AttemptResult::Kind;

// Exit codes: a contract (docs/idem-call.md); never renumber.
constexpr int kExitOk = 0;
constexpr int kExitHttpError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitConnect = 3;
constexpr int kExitDeadline = 4;
constexpr int kExitStopped = 5;
constexpr int kExitOutput = 6;

constexpr const char* kFooter = R"(Exit status:
  0  the final answer was 2xx or 3xx (1xx interim answers are read past)
  1  the final answer was 4xx or 5xx (after any retries)
  2  usage error: bad flag, duration, count, header, URL (a port not 1-65535), -o FILE that
     cannot be created, --cacert FILE that cannot be read
  3  no usable answer: connection refused or broken, TLS certificate refused (after any
     retries); or, never retried, host not found, an answer larger than --max-body or
     --max-header, or an answer that is not HTTP
  4  deadline exceeded: --deadline passed, or the last attempt ran out of --timeout
  5  a retryable failure was not retried: the server sent Idem-Retry: never, the retry budget
     or circuit breaker stopped it, Retry-After asked for more than --max-retry-after, or the
     request is a POST/PATCH without a key (--no-key)
  6  the answer came but could not be written out (a full disk, a closed pipe)

The same Idempotency-Key is sent on every attempt; POST and PATCH get a generated UUIDv7 key
unless --key or --no-key is given. Each attempt carries Idem-Deadline-Ms, the milliseconds it
has left. https:// servers are verified against the system's CA store (plus --cacert).
Durations: 250ms, 2s, 1m30s, 1h; 0 means none.

Examples:
  idem call http://127.0.0.1:8080/orders -d '{"sku":42}' -H 'Content-Type: application/json'
  idem call -v --retries 5 --backoff decorrelated --deadline 10s http://127.0.0.1:8080/health)";

int ExitCodeFor(const retry::RetryOutcome& o) {
  switch (o.reason) {
    case StopReason::kSucceeded:
      return kExitOk;
    case StopReason::kFinalAnswer:
      return kExitHttpError;
    case StopReason::kDeadline:
      return kExitDeadline;
    case StopReason::kAttemptsExhausted:
      if (o.last.kind == Kind::kResponse) return kExitHttpError;
      return o.last.kind == Kind::kTimedOut ? kExitDeadline : kExitConnect;
    case StopReason::kNotRetryable:  // no usable answer: unknown host, too large, not HTTP
      return kExitConnect;
    case StopReason::kRetry:  // not a stop; cannot happen
    case StopReason::kDoNotRetry:
    case StopReason::kUnsafe:
    case StopReason::kRetryAfterTooLong:
    case StopReason::kBudget:
    case StopReason::kCircuitOpen:
      return kExitStopped;
  }
  return kExitStopped;
}

std::string Describe(const AttemptResult& r, const AttemptOutcome& x) {
  if (r.kind == Kind::kNotSent) return "not sent";
  if (r.kind != Kind::kResponse || !x.response) return x.error;
  return fmt::format("{} {}", x.response->result_int(), std::string_view(x.response->reason()));
}

CallAnswer AnswerOf(const http::Response& res) {
  CallAnswer answer{.status = static_cast<int>(res.result_int()), .body = res.body()};
  answer.head = fmt::format("HTTP/1.1 {} {}\r\n", res.result_int(), std::string_view(res.reason()));
  for (const auto& field : res) {
    answer.head += fmt::format("{}: {}\r\n", std::string_view(field.name_string()),
                               std::string_view(field.value()));
  }
  answer.head += "\r\n";
  return answer;
}

struct Guards {
  std::unique_ptr<retry::RetryBudget> budget;
  std::unique_ptr<retry::CircuitBreaker> breaker;
};

absl::StatusOr<Guards> MakeGuards(const CallPlan& plan) {
  Guards g;
  absl::StatusOr<std::unique_ptr<retry::RetryBudget>> budget = retry::RetryBudget::Create(
      {plan.budget_ratio, plan.budget_floor, Millis(10'000)}, SystemClock());
  if (!budget.ok()) return budget.status();
  g.budget = std::move(*budget);
  if (plan.breaker_failures > 0) {
    retry::CircuitBreakerOptions o;
    o.mode = retry::CircuitBreakerOptions::Mode::kConsecutiveFailures;
    o.consecutive_failures = plan.breaker_failures;
    absl::StatusOr<std::unique_ptr<retry::CircuitBreaker>> breaker =
        retry::CircuitBreaker::Create(o, SystemClock());
    if (!breaker.ok()) return breaker.status();
    g.breaker = std::move(*breaker);
  }
  return g;
}

void Verbose(const CallPlan& plan, const retry::AttemptReport& r, const AttemptOutcome& x) {
  const int max = plan.policy.max_attempts;
  std::string line =
      fmt::format("idem call: attempt {}/{}: {} {}", r.attempt, max, plan.request.method, plan.url);
  if (plan.key) line += fmt::format(" [Idempotency-Key {}]", QuoteKey(*plan.key));
  line += fmt::format(" -> {} in {}", Describe(r.result, x), retry::FormatDuration(r.took));
  if (r.decision.retry()) {
    line += fmt::format("; retrying in {} ({} backoff{})", retry::FormatDuration(r.decision.delay),
                        retry::JitterName(plan.backoff.jitter),
                        r.result.retry_after ? ", Retry-After honoured" : "");
  } else {
    line += fmt::format("; stop: {}", retry::StopReasonText(r.decision.reason));
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

void ReportStop(const retry::RetryOutcome& outcome, const AttemptOutcome& last) {
  const std::string what = outcome.last.kind == Kind::kResponse || outcome.attempts == 0
                               ? std::string("gave up")
                               : Describe(outcome.last, last);
  std::fprintf(stderr, "idem call: %s after %d attempt%s in %s: %s\n", what.c_str(),
               outcome.attempts, outcome.attempts == 1 ? "" : "s",
               retry::FormatDuration(outcome.elapsed).c_str(),
               std::string(retry::StopReasonText(outcome.reason)).c_str());
}

// Writes the answer and says why the run stopped; returns the exit code.
int Finish(const CallPlan& plan, const retry::RetryOutcome& outcome, const AttemptOutcome& last,
           CallOutput& output) {
  const bool answered = outcome.last.kind == Kind::kResponse && last.response.has_value();
  const CallAnswer answer = answered ? AnswerOf(*last.response) : CallAnswer{};
  const int code = ExitCodeFor(outcome);
  const CallSummary summary{.exit_code = code,
                            .attempts = outcome.attempts,
                            .stop = outcome.reason,
                            .elapsed_ms = outcome.elapsed.count(),
                            .key = plan.key,
                            .answer = answered ? &answer : nullptr};
  if (!output.Write(summary)) return kExitOutput;
  // A final 4xx/5xx speaks for itself on stdout; every other failure is explained on stderr.
  if (!plan.silent && code != kExitOk && (!answered || code != kExitHttpError)) {
    ReportStop(outcome, last);
  }
  return code;
}

int RunCall(const CallPlan& plan) {
  absl::StatusOr<Guards> guards = MakeGuards(plan);
  absl::StatusOr<retry::RetryPolicy> policy = retry::RetryPolicy::Create(plan.policy);
  absl::StatusOr<retry::Backoff> backoff = retry::Backoff::Create(plan.backoff, plan.seed);
  absl::StatusOr<std::unique_ptr<http::BlockingClient>> client =
      http::BlockingClient::Create({.tls = {.ca_file = plan.cacert}});
  absl::StatusOr<std::unique_ptr<CallOutput>> output =
      client.ok() ? CallOutput::Open(plan.output) : client.status();
  for (const absl::Status& s :
       {guards.status(), policy.status(), backoff.status(), client.status(), output.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "idem call: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  if (plan.verbose && plan.key_generated) {
    std::fprintf(stderr, "idem call: generated Idempotency-Key %s\n", plan.key->c_str());
  }
  retry::RetrierParts parts{&*policy,
                            &*backoff,
                            &SystemClock(),
                            &retry::RealSleeper(),
                            guards->budget.get(),
                            guards->breaker.get()};
  const retry::RequestTraits traits{plan.request.method, plan.key.has_value()};
  AttemptOutcome last;
  const retry::RetryOutcome outcome = retry::RunWithRetries(
      parts, traits,
      [&](const retry::AttemptContext& ctx) {
        HeaderList extra;
        if (ctx.timeout.count() > 0) {
          extra.emplace_back(std::string(retry::kDeadlineHeader),
                             retry::FormatDeadlineHeader(ctx.timeout));
        }
        last = SendAttempt(**client, plan.request, extra, ctx.timeout, plan.limits);
        return last.result;
      },
      [&](const retry::AttemptReport& r) {
        if (plan.verbose) Verbose(plan, r, last);
      });
  return Finish(plan, outcome, last, **output);
}

// Registers every option of `idem call` on `call`; returns the --seed option (to see if given).
CLI::Option* AddCallFlags(CLI::App* call, CallFlags& flags, uint64_t& seed) {
  call->footer(kFooter);
  call->add_option("url", flags.url, "The http:// or https:// URL to call")->required();
  call->add_option("-X,--request", flags.method, "HTTP method (default GET, or POST with -d)");
  call->add_option("-H,--header", flags.headers, "Add a header 'Name: value' (repeatable)");
  call->add_option("-d,--data", flags.data,
                   "Send DATA as the body; @FILE reads a file, @- stdin, byte for byte (curl "
                   "would drop CR and LF)");
  call->add_option("--data-binary", flags.data_binary,
                   "The same as -d (curl's name for a body sent byte for byte)");
  call->add_option("-o,--output", flags.output,
                   "Write the body to FILE instead of stdout (created or truncated first)");
  call->add_flag("-s,--silent", flags.silent, "Say nothing on stderr about why the run stopped");
  call->add_flag("--fail", flags.fail, "Print no body for a final 4xx/5xx answer (exit 1 still)");
  call->add_flag("--json", flags.json,
                 "Print one JSON line instead of the body: exit_code, status, attempts, stop, "
                 "stop_text, elapsed_ms, key (the body goes to -o FILE if given)");
  call->add_option("--max-body", flags.max_body,
                   "Refuse an answer whose body is larger (never retried; default 256MiB)");
  call->add_option("--max-header", flags.max_header,
                   "Refuse an answer whose status line and headers are larger (never retried; "
                   "default 64KiB)");
  call->add_option("--cacert", flags.cacert,
                   "Trust the CA certificates in this PEM file too (https; default: system only)");
  call->add_option("--key", flags.key,
                   "Idempotency-Key to send (default: a new UUIDv7 for POST and PATCH)");
  call->add_flag("--no-key", flags.no_key, "Send no key; POST and PATCH are then never retried");
  call->add_option("--retries", flags.retries, "Retries after the first attempt (default 3)");
  call->add_option("--backoff", flags.backoff,
                   "none|full|equal|decorrelated jitter (default full)");
  call->add_option("--base", flags.base, "First retry's backoff ceiling (default 100ms)");
  call->add_option("--cap", flags.cap, "Longest backoff (default 20s)");
  call->add_option("--deadline", flags.deadline,
                   "Time for all attempts and waits (default 0: none)");
  call->add_option("--timeout", flags.timeout, "Time for one attempt (default 30s; 0: none)");
  call->add_option("--max-retry-after", flags.max_retry_after,
                   "Longest Retry-After to wait for; longer stops (default 60s)");
  call->add_option("--budget-ratio", flags.budget_ratio,
                   "Retries allowed per request in the retry budget (default 0.1)");
  call->add_option("--budget-floor", flags.budget_floor,
                   "Retries per second always allowed by the budget, counted over its 10s window "
                   "(default 10: 100 retries per 10s; /usr/share/doc/idem/retries.md.gz)");
  call->add_option("--breaker", flags.breaker_failures,
                   "Open a circuit breaker after N failures in a row (default 0: off)");
  CLI::Option* seed_opt =
      call->add_option("--seed", seed, "Seed the backoff jitter (for reproducible runs)")
          ->check(Uint64Flag());
  call->add_flag("-i,--include", flags.include, "Print the status line and headers too");
  call->add_flag("-v,--verbose", flags.verbose, "Report every attempt on stderr");
  return seed_opt;
}

}  // namespace

void AddCallCommand(CLI::App& app, int& exit_code) {
  auto flags = std::make_shared<CallFlags>();
  auto seed = std::make_shared<uint64_t>(0);
  CLI::App* call = app.add_subcommand(
      "call", "Send an HTTP request with an Idempotency-Key, retrying it safely");
  CLI::Option* seed_opt = AddCallFlags(call, *flags, *seed);
  call->callback([flags, seed, seed_opt, &exit_code] {
    if (seed_opt->count() > 0) flags->seed = *seed;
    absl::StatusOr<CallPlan> plan = MakeCallPlan(*flags);
    if (!plan.ok()) {
      std::fprintf(stderr, "idem call: %s\n", std::string(plan.status().message()).c_str());
      exit_code = kExitUsage;
      return;
    }
    exit_code = RunCall(*plan);
  });
}

}  // namespace idem::cli
