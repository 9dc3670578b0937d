// idem/clock.h: the time source every rule about leases and expiry reads.
//
// Time is injected so that lease and retention rules are tested without sleeping. All times are
// integer milliseconds since the Unix epoch, UTC, as stored in every store.
//
// Thread-safety: SystemClock and ManualClock are safe to call from any thread.
#ifndef IDEM_CLOCK_H_
#define IDEM_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace idem {

using Millis = std::chrono::milliseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // Returns the current time in milliseconds since the Unix epoch.
  virtual int64_t NowMillis() const = 0;
};

// Returns the process-wide wall clock. Never null; lives for the whole process.
Clock& SystemClock();

// A clock that moves only when told to; for tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_millis = 1'700'000'000'000) : now_(start_millis) {}
  ManualClock(const ManualClock&) = delete;
  ManualClock& operator=(const ManualClock&) = delete;

  int64_t NowMillis() const override { return now_.load(std::memory_order_relaxed); }
  void Advance(Millis by) { now_.fetch_add(by.count(), std::memory_order_relaxed); }
  void Set(int64_t millis) { now_.store(millis, std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace idem

#endif  // IDEM_CLOCK_H_
