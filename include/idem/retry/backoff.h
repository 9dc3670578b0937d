// idem/retry/backoff.h: how long to wait before each retry.
//
// Four schedules, all capped (see docs/retries.md), with v = min(cap, base * 2^n) for retry n
// (n = 0 before the first retry):
//   none          v                                   (plain exponential, no jitter)
//   full          U(0, v)                             (spreads retries over the whole window)
//   equal         v/2 + U(0, v/2)                     (keeps at least half the wait)
//   decorrelated  min(cap, U(base, 3 * previous))     (previous starts at base; per caller)
// Randomness comes from a seeded std::mt19937_64, so a seed reproduces a schedule exactly.
//
// Thread-safety: ComputeDelay is pure apart from the generator it is given. A Backoff holds one
// caller's state; use one per logical request (or guard it yourself).
#ifndef IDEM_RETRY_BACKOFF_H_
#define IDEM_RETRY_BACKOFF_H_

#include <cstdint>
#include <random>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::retry {

enum class Jitter { kNone, kFull, kEqual, kDecorrelated };

// Returns the jitter named "none", "full", "equal" or "decorrelated"; InvalidArgument otherwise.
absl::StatusOr<Jitter> ParseJitter(std::string_view name);

// Returns the name ParseJitter accepts for `jitter`.
std::string_view JitterName(Jitter jitter);

struct BackoffOptions {
  Jitter jitter = Jitter::kFull;  // default: full jitter, the best spread for contended servers
  Millis base{100};               // default 100 ms; the first retry's ceiling
  Millis cap{20'000};             // default 20 s; no delay ever exceeds it
};

// Returns OK, or InvalidArgument when base is negative or cap is below base.
absl::Status ValidateBackoffOptions(const BackoffOptions& options);

// Returns min(cap, base * 2^retry) without overflowing, for any retry >= 0.
Millis CappedExponential(const BackoffOptions& options, int retry);

// Returns the delay before retry number `retry` (0-based). `previous` is the delay returned for
// the retry before (used only by decorrelated jitter; pass `base` for the first retry).
// REQUIRES: ValidateBackoffOptions(options).ok(), retry >= 0.
Millis ComputeDelay(const BackoffOptions& options, int retry, Millis previous,
                    std::mt19937_64& rng);

// One caller's backoff state: which retry comes next and, for decorrelated jitter, the last delay.
class Backoff final {
 public:
  // Returns a schedule drawing from a generator seeded with `seed`; InvalidArgument as
  // ValidateBackoffOptions.
  static absl::StatusOr<Backoff> Create(const BackoffOptions& options, uint64_t seed);

  // Returns the delay to wait before the next retry and advances to the retry after it.
  Millis NextDelay();

  // Starts again from the first retry (after a success, for instance).
  void Reset();

  int retries() const { return retries_; }
  const BackoffOptions& options() const { return options_; }

 private:
  Backoff(const BackoffOptions& options, uint64_t seed)
      : options_(options), rng_(seed), previous_(options.base) {}

  BackoffOptions options_;
  std::mt19937_64 rng_;
  int retries_ = 0;
  Millis previous_;
};

}  // namespace idem::retry

#endif  // IDEM_RETRY_BACKOFF_H_
