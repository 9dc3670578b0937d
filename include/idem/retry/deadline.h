// idem/retry/deadline.h: deadlines passed on from caller to server, so timeouts shrink inward.
//
// A caller with a time budget sends what is left of it on every request, as whole milliseconds
// in the `Idem-Deadline-Ms` header (e.g. `Idem-Deadline-Ms: 1850`). A server reads it with
// ShrinkTimeout and gives its own work, and its own outgoing calls, no more than
// min(own timeout, remaining budget): a caller that gives up after 2 s never leaves a server
// working for 30 s on an answer nobody will read. The value is relative, so clocks need not agree.
//
// Thread-safety: Deadline is an immutable value; the functions have no state.
#ifndef IDEM_RETRY_DEADLINE_H_
#define IDEM_RETRY_DEADLINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "idem/clock.h"

namespace idem::retry {

inline constexpr std::string_view kDeadlineHeader = "Idem-Deadline-Ms";

// A point in time by which the work must be done, read against a Clock.
class Deadline final {
 public:
  // Returns a deadline `budget` from now on `clock`, which must outlive it.
  static Deadline After(const Clock& clock, Millis budget) {
    return Deadline(clock, clock.NowMillis() + budget.count());
  }

  // Returns the time left, never negative.
  Millis Remaining() const {
    const int64_t left = at_millis_ - clock_->NowMillis();
    return Millis(left > 0 ? left : 0);
  }
  bool Expired() const { return Remaining().count() == 0; }
  int64_t at_millis() const { return at_millis_; }

 private:
  Deadline(const Clock& clock, int64_t at_millis) : clock_(&clock), at_millis_(at_millis) {}
  const Clock* clock_;
  int64_t at_millis_;
};

// Returns the header value announcing `remaining` (negative counts as 0): "1850".
std::string FormatDeadlineHeader(Millis remaining);

// Returns the budget an Idem-Deadline-Ms value announces, or InvalidArgument when it is not a
// whole number of milliseconds (digits only, at most 12 of them).
absl::StatusOr<Millis> ParseDeadlineHeader(std::string_view value);

// Returns min(own_timeout, remaining), or own_timeout when remaining is absent. A result of 0
// means the caller's budget is spent: answer at once (504) rather than start the work.
// REQUIRES: own_timeout > 0 (pass Millis::max() for a server without a timeout of its own).
Millis ShrinkTimeout(Millis own_timeout, std::optional<Millis> remaining);

// For a server: returns the timeout to use given its own and the request's Idem-Deadline-Ms
// header value (nullopt when the header is absent). InvalidArgument for a malformed header, so
// the server can answer 400 rather than guess. REQUIRES: own_timeout > 0.
absl::StatusOr<Millis> TimeoutForRequest(Millis own_timeout,
                                         std::optional<std::string_view> header_value);

}  // namespace idem::retry

#endif  // IDEM_RETRY_DEADLINE_H_
