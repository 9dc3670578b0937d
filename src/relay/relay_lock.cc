#include "relay/relay_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace idem::relay {

absl::StatusOr<std::string> SqlitePathOf(std::string_view uri) {
  if (!uri.starts_with("sqlite:")) {
    return absl::InvalidArgumentError("not a sqlite: store URI");
  }
  std::string_view rest = uri.substr(std::string_view("sqlite:").size());
  rest = rest.substr(0, rest.find('?'));
  if (rest.starts_with("///")) rest = rest.substr(3);
  if (rest.empty() || rest.starts_with("//")) {
    return absl::InvalidArgumentError("the sqlite: store URI names no file");
  }
  return std::string(rest);
}

absl::StatusOr<std::unique_ptr<RelayLock>> RelayLock::TryAcquire(const std::string& path) {
  const std::string lock_path = path + ".relay-lock";
  const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    const std::string message =
        fmt::format("cannot open the relay lock file {}: {}", lock_path, std::strerror(error));
    if (error == EACCES || error == EROFS) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd);
    if (error == EWOULDBLOCK) {
      return absl::AbortedError(fmt::format(
          "another idem relay is running on this SQLite store (it holds {}); one relay at a "
          "time publishes a SQLite outbox: stop it, or pass --wait to take over when it exits",
          lock_path));
    }
    return absl::InternalError(fmt::format("cannot lock {}: {}", lock_path, std::strerror(error)));
  }
  return std::unique_ptr<RelayLock>(new RelayLock(fd));
}

RelayLock::~RelayLock() { ::close(fd_); }

}  // namespace idem::relay
