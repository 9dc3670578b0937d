#include "common/host_clock.h"

#include <time.h>

#include <fstream>
#include <string>

namespace idem {
namespace {

// The kernel's name for this boot, read once; empty when it cannot be read.
const std::string& BootId() {
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string line;
    if (!std::getline(in, line)) return std::string();
    return line;
  }();
  return id;
}

class BootClock final : public HostClock {
 public:
  HostTime Now() const override {
    timespec ts{};
    if (BootId().empty() || clock_gettime(CLOCK_BOOTTIME, &ts) != 0) return {};
    return {BootId(), int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000};
  }
};

}  // namespace

const HostClock& SystemHostClock() {
  static const BootClock clock;
  return clock;
}

}  // namespace idem
