// idem/retry/retry_policy.h: whether to retry after one attempt, and after how long.
//
// A retry is made only when all of these hold (docs/retries.md explains each):
//   - the failure is transient: no connection, a timed-out or broken attempt, or an answer of
//     408, 425, 429 or 5xx (except 501 and 505, which retrying cannot change);
//   - the request is safe to repeat: an idempotent method (GET, HEAD, OPTIONS, TRACE, PUT,
//     DELETE) or one that carries an Idempotency-Key;
//   - the server did not say `Idem-Retry: never`;
//   - attempts remain, and the wait (backoff, or Retry-After when longer) ends before the deadline;
//   - a Retry-After, when given, is no longer than max_retry_after.
// Budgets and breakers, which hold state shared between requests, are checked by the retrier.
//
// Thread-safety: RetryPolicy is immutable after Create; safe from any thread.
#ifndef IDEM_RETRY_RETRY_POLICY_H_
#define IDEM_RETRY_RETRY_POLICY_H_

#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::retry {

// The response header by which a server (or an inner layer that already retried) tells callers
// that its answer is final: `Idem-Retry: never`. Any other value is ignored.
inline constexpr std::string_view kRetryControlHeader = "Idem-Retry";
inline constexpr std::string_view kRetryNeverValue = "never";

// Returns true when a header value of kRetryControlHeader forbids retries ("never", any case).
bool IsDoNotRetry(std::string_view header_value);

// Returns true for methods RFC 9110 defines as idempotent: GET HEAD OPTIONS TRACE PUT DELETE.
bool IsIdempotentMethod(std::string_view method);

// Returns true for the HTTP statuses that may succeed when the same request is sent again.
bool IsRetryableStatus(int status);

// What one attempt came to.
struct AttemptResult {
  enum class Kind {
    kResponse,       // a complete HTTP answer (any status)
    kConnectFailed,  // DNS failure or connection refused: nothing reached the server
    kTimedOut,       // the attempt's time ran out (connect, send or receive)
    kBroken,         // the connection broke or the answer was cut short
    kNotSent,        // refused locally before sending (an open circuit)
    kPermanent,      // a failure no retry can change: the host does not exist (NXDOMAIN), the
                     // answer was larger than allowed or was not HTTP
  };
  Kind kind = Kind::kNotSent;
  int status = 0;                     // kResponse only
  std::optional<Millis> retry_after;  // the server's Retry-After, already parsed
  bool do_not_retry = false;          // the server sent `Idem-Retry: never`
};

// Returns true when `result` is a failure that a retry might turn into a success.
bool IsTransientFailure(const AttemptResult& result);

// Why a request stopped (or kRetry: it did not).
enum class StopReason {
  kRetry,              // not stopped: retry after Decision::delay
  kSucceeded,          // an answer below 400
  kFinalAnswer,        // an answer retrying cannot change (most 4xx)
  kAttemptsExhausted,  // max_attempts made
  kDeadline,           // the deadline passed, or would before the next attempt could start
  kDoNotRetry,         // the server said `Idem-Retry: never`
  kUnsafe,             // not idempotent and no Idempotency-Key
  kRetryAfterTooLong,  // the server asked to wait longer than max_retry_after
  kBudget,             // the retry budget is spent
  kCircuitOpen,        // the circuit breaker refused the attempt
  kNotRetryable,       // a failure retrying cannot change (AttemptResult::Kind::kPermanent)
};

// Returns a short lower-case phrase for `reason`, for logs and messages.
std::string_view StopReasonText(StopReason reason);

struct RetryPolicyOptions {
  int max_attempts = 3;            // default 3; counts the first attempt; 1 means no retries
  Millis deadline{0};              // default 0 = none; covers every attempt and every wait
  Millis attempt_timeout{0};       // default 0 = none; each attempt also ends at the deadline
  Millis max_retry_after{60'000};  // default 60 s; a longer Retry-After stops the retries
};

struct RequestTraits {
  std::string_view method;  // upper case, as sent
  bool has_key = false;     // carries an Idempotency-Key
};

struct Decision {
  StopReason reason = StopReason::kRetry;
  Millis delay{0};  // the wait before the next attempt; meaningful for kRetry only
  bool retry() const { return reason == StopReason::kRetry; }
};

class RetryPolicy final {
 public:
  // Returns a policy, or InvalidArgument for max_attempts < 1 or a negative duration.
  static absl::StatusOr<RetryPolicy> Create(const RetryPolicyOptions& options);

  // Decides what follows `result`, the outcome of attempt number `attempts_made` (1-based),
  // `elapsed` after the first attempt started; `backoff_delay` is the backoff's proposal.
  Decision Decide(const RequestTraits& request, const AttemptResult& result, int attempts_made,
                  Millis elapsed, Millis backoff_delay) const;

  // Returns the time the next attempt may take when it starts `elapsed` after the first:
  // min(attempt_timeout, deadline - elapsed), at least 1 ms when a deadline is set; 0 means
  // unbounded (neither a deadline nor an attempt timeout).
  Millis AttemptTimeout(Millis elapsed) const;

  // Returns true when a deadline is set and `elapsed` has reached it.
  bool DeadlinePassed(Millis elapsed) const;

  const RetryPolicyOptions& options() const { return options_; }

 private:
  explicit RetryPolicy(const RetryPolicyOptions& options) : options_(options) {}
  RetryPolicyOptions options_;
};

}  // namespace idem::retry

#endif  // IDEM_RETRY_RETRY_POLICY_H_
