#include "common/host_clock.h"

#include <gtest/gtest.h>
#include <time.h>

#include <fstream>
#include <string>

namespace idem {
namespace {

// Linux: the host clock is CLOCK_BOOTTIME, named by the kernel's boot_id, which every process of
// the host reads alike.
TEST(SystemHostClock, IsTheBootClockOfThisBoot) {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string boot_id;
  ASSERT_TRUE(std::getline(in, boot_id));
  const HostTime before = SystemHostClock().Now();
  timespec ts{};
  ASSERT_EQ(clock_gettime(CLOCK_BOOTTIME, &ts), 0);
  const HostTime after = SystemHostClock().Now();
  EXPECT_EQ(before.boot, boot_id);
  EXPECT_EQ(after.boot, boot_id);
  const int64_t boot_ms = int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1'000'000;
  EXPECT_LE(before.millis, boot_ms);
  EXPECT_GE(after.millis, boot_ms);
}

}  // namespace
}  // namespace idem
