// The host clock: a clock that steps of the wall clock (an NTP step, a VM resumed, a person
// setting the date) never move, and that every process of one host reads alike. On Linux it is
// CLOCK_BOOTTIME (milliseconds since the host booted, suspended time included), named by the
// kernel's boot_id. The SQLite store's leases run on it (docs/sqlite-store.md, "Time rules").
//
// Thread-safety: SystemHostClock() is safe to call from any thread.
#ifndef IDEM_COMMON_HOST_CLOCK_H_
#define IDEM_COMMON_HOST_CLOCK_H_

#include <cstdint>
#include <string_view>

namespace idem {

struct HostTime {
  // The boot the reading counts from: readings of two boots never compare. Empty when there is
  // no host clock. Points to storage that lives as long as the clock.
  std::string_view boot;
  int64_t millis = 0;
};

class HostClock {
 public:
  virtual ~HostClock() = default;
  // Returns the current reading.
  virtual HostTime Now() const = 0;
};

// Returns the process-wide host clock: CLOCK_BOOTTIME, named by
// /proc/sys/kernel/random/boot_id; its readings have an empty boot where that file cannot be
// read. Never null; lives for the whole process.
const HostClock& SystemHostClock();

}  // namespace idem

#endif  // IDEM_COMMON_HOST_CLOCK_H_
