#include "store/nats/nats_server_name.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace idem::nats {
namespace {

// An INFO line is a few hundred bytes; a server with many cluster URLs stays far below this.
constexpr size_t kMaxInfo = 64 * 1024;

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Waits until `fd` has `events` or `deadline` passes; false on a timeout or an error.
bool Await(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int n = poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

// A connected non-blocking socket to one of `host`'s addresses, or -1.
int ConnectTo(const std::string& host, const std::string& port,
              std::chrono::steady_clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int connected = -1;
  for (addrinfo* a = found; a != nullptr && connected < 0; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    bool ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (!ok && errno == EINPROGRESS && Await(fd, POLLOUT, deadline)) {
      int error = 0;
      socklen_t size = sizeof(error);
      ok = getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 && error == 0;
    }
    if (ok) {
      connected = fd;
    } else {
      close(fd);
    }
  }
  freeaddrinfo(found);
  return connected;
}

}  // namespace

std::string HostPort(std::string_view url) {
  if (const size_t scheme = url.find("://"); scheme != std::string_view::npos) {
    url.remove_prefix(scheme + 3);
  }
  if (const size_t at = url.rfind('@'); at != std::string_view::npos) url.remove_prefix(at + 1);
  if (const size_t slash = url.find('/'); slash != std::string_view::npos) {
    url = url.substr(0, slash);
  }
  return std::string(url);
}

std::optional<std::string> ServerNameOfInfo(std::string_view info) {
  constexpr std::string_view kField = "\"server_name\"";
  size_t at = info.find(kField);
  if (at == std::string_view::npos) return std::nullopt;
  at += kField.size();
  while (at < info.size() && (info[at] == ' ' || info[at] == ':')) ++at;
  if (at >= info.size() || info[at] != '"') return std::nullopt;
  std::string name;
  for (++at; at < info.size(); ++at) {
    char c = info[at];
    if (c == '"') return name.empty() ? std::nullopt : std::optional<std::string>(name);
    if (c == '\\' && at + 1 < info.size()) c = info[++at];  // \" and \\ (names need no others)
    name.push_back(c);
  }
  return std::nullopt;  // unterminated
}

absl::StatusOr<std::string> ProbeServerName(std::string_view host_port, Millis timeout) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos) {
    return absl::InvalidArgumentError(fmt::format("'{}' is not HOST:PORT", host_port));
  }
  std::string host(host_port.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port(host_port.substr(colon + 1));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  Fd fd(ConnectTo(host, port, deadline));
  if (fd.get() < 0) {
    return absl::UnavailableError(fmt::format("no NATS server answers at {}", host_port));
  }
  std::string info;
  char buffer[4096];
  while (info.find("\r\n") == std::string::npos && info.size() < kMaxInfo) {
    if (!Await(fd.get(), POLLIN, deadline)) break;
    const ssize_t n = read(fd.get(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    info.append(buffer, static_cast<size_t>(n));
  }
  if (!info.starts_with("INFO") || info.find("\r\n") == std::string::npos) {
    return absl::UnavailableError(
        fmt::format("the server at {} sent no INFO line in {} ms", host_port, timeout.count()));
  }
  std::optional<std::string> name = ServerNameOfInfo(info.substr(0, info.find("\r\n")));
  if (!name.has_value()) {
    return absl::NotFoundError(fmt::format("the server at {} has no name", host_port));
  }
  return *std::move(name);
}

}  // namespace idem::nats
