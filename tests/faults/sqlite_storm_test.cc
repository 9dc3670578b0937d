// Store faults end to end on SQLite (issue 22): two gateways on one database file, duplicate
// clients at both (tests/faults/storm.h), while the file's disk is full for a few seconds: the
// database lives on a small tmpfs the test mounts (it runs as root, as CI does), which a filler
// file fills and then frees. Where mounting is refused, a file size limit on both gateways
// (prlimit --pid) makes the same fault. Every key has one answer, the one recorded, the
// upstream's last execution, and no key ran twice: the outage is shorter than the lease.
#include <sys/mount.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "storm_fixture.h"

namespace idem::faults {
namespace {

using namespace std::chrono_literals;

constexpr int kKeys = 200;
constexpr int kPairs = 8;

class SqliteFaultStormE2E : public FaultStormFixture {
 protected:
  void SetUp() override {
    FaultStormFixture::SetUp();
    if (HasFatalFailure()) return;
    disk_ = dir_ + "/disk";
    std::filesystem::create_directory(disk_);
    mounted_ = mount("tmpfs", disk_.c_str(), "tmpfs", 0, "size=32m") == 0;
    if (!mounted_)
      std::cout << "note: mounting a tmpfs was refused (" << std::strerror(errno)
                << "): a file size limit fills the disk instead\n";
    store_ = "sqlite:" + disk_ + "/idem.db";
  }

  void TearDown() override {
    StopGateways();
    if (mounted_ && umount2(disk_.c_str(), MNT_DETACH) != 0)
      ADD_FAILURE() << "umount " << disk_ << ": " << std::strerror(errno);
    FaultStormFixture::TearDown();
  }

  // The disk is full from now on: a filler file takes what the tmpfs has left, or (not mounted)
  // no gateway may grow a file past the size of the database's largest file now.
  void FillDisk() {
    if (mounted_) {
      FILE* filler = std::fopen((disk_ + "/filler").c_str(), "w");
      ASSERT_NE(filler, nullptr) << std::strerror(errno);
      const std::string chunk(64 * 1024, 'x');
      while (std::fwrite(chunk.data(), 1, chunk.size(), filler) == chunk.size() &&
             std::fflush(filler) == 0) {
      }
      std::fclose(filler);
      return;
    }
    uintmax_t largest = 0;
    for (const auto& entry : std::filesystem::directory_iterator(disk_))
      largest = std::max(largest, entry.file_size());
    SetFileSizeLimit(static_cast<rlim_t>(largest));
  }

  void FreeDisk() {
    if (mounted_) {
      std::filesystem::remove(disk_ + "/filler");
    } else {
      SetFileSizeLimit(RLIM_INFINITY);
    }
  }

  void SetFileSizeLimit(rlim_t bytes) {
    const rlimit limit{.rlim_cur = bytes, .rlim_max = RLIM_INFINITY};
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(prlimit(gateways_[i]->pid(), RLIMIT_FSIZE, &limit, nullptr), 0)
          << std::strerror(errno);
  }

  std::string disk_;
  bool mounted_ = false;
};

TEST_F(SqliteFaultStormE2E, DiskFullThenFreedEveryKeyHasOneAnswerItsLastExecutionRunOnce) {
  StartGateways({"--lease", "12s", "--upstream-timeout", "5s"});
  Storm storm(Options("sqlite", kKeys, kPairs));
  storm.Start();
  // A moment into the run (a fifth of the keys answered by both clients): the disk fills.
  ASSERT_TRUE(storm.WaitForAnswers(2 * kKeys / 5, 60s));
  Outage([&] {
    FillDisk();
    std::this_thread::sleep_for(3s);  // how long the disk stays full: the fault schedule
    FreeDisk();
  });
  if (HasFatalFailure()) return;
  ASSERT_TRUE(storm.Finish(90s));
  ExpectOneAnswerPerKey(storm, 12s);
}

}  // namespace
}  // namespace idem::faults
