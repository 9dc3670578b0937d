#include "idem/retry/backoff.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::retry {
namespace {

// Uniform whole milliseconds in [lo, hi].
Millis Uniform(Millis lo, Millis hi, std::mt19937_64& rng) {
  if (hi <= lo) return lo;
  std::uniform_int_distribution<int64_t> dist(lo.count(), hi.count());
  return Millis(dist(rng));
}

}  // namespace

absl::StatusOr<Jitter> ParseJitter(std::string_view name) {
  if (name == "none") return Jitter::kNone;
  if (name == "full") return Jitter::kFull;
  if (name == "equal") return Jitter::kEqual;
  if (name == "decorrelated") return Jitter::kDecorrelated;
  return absl::InvalidArgumentError(
      fmt::format("unknown backoff '{}'; choose one of none, full, equal, decorrelated", name));
}

std::string_view JitterName(Jitter jitter) {
  switch (jitter) {
    case Jitter::kNone:
      return "none";
    case Jitter::kFull:
      return "full";
    case Jitter::kEqual:
      return "equal";
    case Jitter::kDecorrelated:
      return "decorrelated";
  }
  return "unknown";
}

absl::Status ValidateBackoffOptions(const BackoffOptions& options) {
  if (options.base.count() < 0) {
    return absl::InvalidArgumentError(
        fmt::format("backoff base must not be negative, got {} ms", options.base.count()));
  }
  if (options.cap < options.base) {
    return absl::InvalidArgumentError(fmt::format(
        "backoff cap ({} ms) must be at least the base ({} ms); raise the cap or lower the base",
        options.cap.count(), options.base.count()));
  }
  return absl::OkStatus();
}

Millis CappedExponential(const BackoffOptions& options, int retry) {
  int64_t v = options.base.count();
  const int64_t cap = options.cap.count();
  // Doubling one step at a time stops at the cap long before int64 could overflow.
  for (int i = 0; i < retry && v < cap; ++i) v = v == 0 ? 0 : v * 2;
  return Millis(std::min(v, cap));
}

Millis ComputeDelay(const BackoffOptions& options, int retry, Millis previous,
                    std::mt19937_64& rng) {
  const Millis v = CappedExponential(options, retry);
  switch (options.jitter) {
    case Jitter::kNone:
      return v;
    case Jitter::kFull:
      return Uniform(Millis(0), v, rng);
    case Jitter::kEqual:
      return v / 2 + Uniform(Millis(0), v - v / 2, rng);
    case Jitter::kDecorrelated: {
      const Millis prev = std::max(previous, options.base);
      const Millis hi = prev > options.cap ? options.cap * 3 : prev * 3;
      return std::min(options.cap, Uniform(options.base, hi, rng));
    }
  }
  return v;
}

absl::StatusOr<Backoff> Backoff::Create(const BackoffOptions& options, uint64_t seed) {
  absl::Status valid = ValidateBackoffOptions(options);
  if (!valid.ok()) return valid;
  return Backoff(options, seed);
}

Millis Backoff::NextDelay() {
  const Millis delay = ComputeDelay(options_, retries_, previous_, rng_);
  previous_ = delay;
  ++retries_;
  return delay;
}

void Backoff::Reset() {
  retries_ = 0;
  previous_ = options_.base;
}

}  // namespace idem::retry
