#include "idem/retry/retry_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "absl/status/status.h"
#include "common/optional_whitespace.h"

namespace idem::retry {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

bool IsDoNotRetry(std::string_view header_value) {
  return EqualsIgnoreCase(TrimOptionalWhitespace(header_value), kRetryNeverValue);
}

bool IsIdempotentMethod(std::string_view method) {
  constexpr std::array<std::string_view, 6> kIdempotent = {"GET",   "HEAD", "OPTIONS",
                                                           "TRACE", "PUT",  "DELETE"};
  return std::find(kIdempotent.begin(), kIdempotent.end(), method) != kIdempotent.end();
}

bool IsRetryableStatus(int status) {
  if (status == 408 || status == 425 || status == 429) return true;
  return status >= 500 && status <= 599 && status != 501 && status != 505;
}

bool IsTransientFailure(const AttemptResult& result) {
  switch (result.kind) {
    case AttemptResult::Kind::kResponse:
      return IsRetryableStatus(result.status);
    case AttemptResult::Kind::kConnectFailed:
    case AttemptResult::Kind::kTimedOut:
    case AttemptResult::Kind::kBroken:
      return true;
    case AttemptResult::Kind::kNotSent:
    case AttemptResult::Kind::kPermanent:
      return false;
  }
  return false;
}

std::string_view StopReasonText(StopReason reason) {
  switch (reason) {
    case StopReason::kRetry:
      return "retrying";
    case StopReason::kSucceeded:
      return "succeeded";
    case StopReason::kFinalAnswer:
      return "final answer, not retryable";
    case StopReason::kAttemptsExhausted:
      return "attempts exhausted";
    case StopReason::kDeadline:
      return "deadline exceeded";
    case StopReason::kDoNotRetry:
      return "server said Idem-Retry: never";
    case StopReason::kUnsafe:
      return "not idempotent and no Idempotency-Key, so never retried";
    case StopReason::kRetryAfterTooLong:
      return "Retry-After longer than allowed";
    case StopReason::kBudget:
      return "retry budget spent";
    case StopReason::kCircuitOpen:
      return "circuit breaker open";
    case StopReason::kNotRetryable:
      return "a failure retrying cannot change, so not retried";
  }
  return "unknown";
}

absl::StatusOr<RetryPolicy> RetryPolicy::Create(const RetryPolicyOptions& options) {
  if (options.max_attempts < 1) {
    return absl::InvalidArgumentError(fmt::format(
        "max_attempts must be at least 1 (the first attempt), got {}", options.max_attempts));
  }
  if (options.deadline.count() < 0 || options.attempt_timeout.count() < 0 ||
      options.max_retry_after.count() < 0) {
    return absl::InvalidArgumentError(
        "deadline, attempt timeout and max Retry-After must not be "
        "negative; use 0 for none");
  }
  return RetryPolicy(options);
}

Decision RetryPolicy::Decide(const RequestTraits& request, const AttemptResult& result,
                             int attempts_made, Millis elapsed, Millis backoff_delay) const {
  if (result.kind == AttemptResult::Kind::kResponse && !IsRetryableStatus(result.status)) {
    return {result.status < 400 ? StopReason::kSucceeded : StopReason::kFinalAnswer, Millis(0)};
  }
  if (result.kind == AttemptResult::Kind::kNotSent) return {StopReason::kCircuitOpen, Millis(0)};
  if (result.kind == AttemptResult::Kind::kPermanent) return {StopReason::kNotRetryable, Millis(0)};
  if (result.do_not_retry) return {StopReason::kDoNotRetry, Millis(0)};
  if (!request.has_key && !IsIdempotentMethod(request.method)) {
    return {StopReason::kUnsafe, Millis(0)};
  }
  if (DeadlinePassed(elapsed)) return {StopReason::kDeadline, Millis(0)};
  if (attempts_made >= options_.max_attempts) return {StopReason::kAttemptsExhausted, Millis(0)};
  Millis delay = backoff_delay;
  if (result.retry_after) {
    if (*result.retry_after > options_.max_retry_after) {
      return {StopReason::kRetryAfterTooLong, Millis(0)};
    }
    delay = std::max(delay, *result.retry_after);
  }
  if (DeadlinePassed(elapsed + delay)) return {StopReason::kDeadline, Millis(0)};
  return {StopReason::kRetry, delay};
}

Millis RetryPolicy::AttemptTimeout(Millis elapsed) const {
  Millis timeout = options_.attempt_timeout;
  if (options_.deadline.count() > 0) {
    const Millis left = std::max(Millis(1), options_.deadline - elapsed);
    timeout = timeout.count() > 0 ? std::min(timeout, left) : left;
  }
  return timeout;
}

bool RetryPolicy::DeadlinePassed(Millis elapsed) const {
  return options_.deadline.count() > 0 && elapsed >= options_.deadline;
}

}  // namespace idem::retry
