// FreePort (e2e_support.h): the ports e2e tests hand to their child processes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <vector>

#include "e2e_support.h"

namespace idem::e2e {
namespace {

constexpr int kDraws = 300;

TEST(FreePort, NeverHandsOutOnePortTwiceInAProcess) {
  std::set<int> seen;
  for (int i = 0; i < kDraws; ++i) {
    const int port = FreePort();
    ASSERT_GT(port, 0);
    EXPECT_TRUE(seen.insert(port).second) << "port " << port << " handed out twice";
  }
}

// A forked child continues from the parent's random state, so both draw the same sequence: the
// worst case of two test processes drawing at once. The parent must skip every port the child
// holds.
TEST(FreePort, NeverHandsOutAPortAnotherRunningProcessHolds) {
  ASSERT_GT(FreePort(), 0);  // the random state exists before the fork, shared by both
  int ports[2];
  int release[2];
  ASSERT_EQ(pipe(ports), 0);
  ASSERT_EQ(pipe(release), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ports[0]);
    close(release[1]);
    for (int i = 0; i < kDraws; ++i) {
      const int port = FreePort();
      if (write(ports[1], &port, sizeof port) != sizeof port) _exit(2);
    }
    char byte;
    (void)read(release[0], &byte, 1);  // holds its ports until the parent has drawn its own
    _exit(0);
  }
  close(ports[1]);
  close(release[0]);
  std::set<int> childs;
  for (int i = 0; i < kDraws; ++i) {
    int port = 0;
    ASSERT_EQ(read(ports[0], &port, sizeof port), static_cast<ssize_t>(sizeof port));
    childs.insert(port);
  }
  std::vector<int> shared;
  for (int i = 0; i < kDraws; ++i) {
    const int port = FreePort();
    if (childs.count(port) != 0) shared.push_back(port);
  }
  close(release[1]);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(shared.empty()) << shared.size() << " ports drawn by both processes";
}

}  // namespace
}  // namespace idem::e2e
