// Port claims among test processes (scripts/test-ports.sh, FreePort in tests/gateway): a port in
// use by a fixture or an e2e test is claimed with an exclusive flock on /tmp/idem-test-ports/PORT.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace idem::testing {

// true when another process holds the claim on `port`: this one cannot take the lock.
inline bool PortClaimedElsewhere(int port) {
  const std::string path = "/tmp/idem-test-ports/" + std::to_string(port);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool held = flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // releases the lock if this process took it
  return held;
}

}  // namespace idem::testing
