#include "upstream_call.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace idem::storm {
namespace {

using Clock = std::chrono::steady_clock;

// Closes the socket on every way out of PostToUpstream.
class Socket {
 public:
  Socket() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {}
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

// Waits until `fd` is ready for `events` or the deadline passed (false).
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{.fd = fd, .events = events, .revents = 0};
    const int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // the read or write that follows reports it
  }
}

// The answer once `data` holds all of it: a head and Content-Length bytes (the storm's upstream
// always sends Content-Length), or everything up to the close.
std::optional<absl::StatusOr<UpstreamAnswer>> Parse(absl::string_view data, bool closed) {
  const size_t head_end = data.find("\r\n\r\n");
  if (head_end == absl::string_view::npos) {
    if (closed)
      return absl::StatusOr<UpstreamAnswer>(
          absl::UnavailableError("the upstream closed the connection without an answer"));
    return std::nullopt;
  }
  const absl::string_view head = data.substr(0, head_end);
  UpstreamAnswer answer;
  if (!absl::StartsWith(head, "HTTP/1.") || head.size() < 12 ||
      !absl::SimpleAtoi(head.substr(9, 3), &answer.status)) {
    return absl::StatusOr<UpstreamAnswer>(
        absl::InternalError(absl::StrCat("not an HTTP answer: ", head.substr(0, 40))));
  }
  size_t length = absl::string_view::npos;
  for (size_t at = head.find("\r\n"); at != absl::string_view::npos;) {
    const size_t next = head.find("\r\n", at + 2);
    const absl::string_view line = head.substr(
        at + 2, next == absl::string_view::npos ? absl::string_view::npos : next - at - 2);
    const size_t colon = line.find(':');
    if (colon != absl::string_view::npos &&
        absl::EqualsIgnoreCase(line.substr(0, colon), "content-length")) {
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(colon + 1)), &length)) {
        return absl::StatusOr<UpstreamAnswer>(absl::InternalError("a bad Content-Length"));
      }
    }
    at = next;
  }
  const absl::string_view rest = data.substr(head_end + 4);
  if (length == absl::string_view::npos) {
    if (!closed) return std::nullopt;
    length = rest.size();
  }
  if (rest.size() < length) {
    if (closed)
      return absl::StatusOr<UpstreamAnswer>(
          absl::UnavailableError("the upstream closed the connection in the middle of its answer"));
    return std::nullopt;
  }
  answer.body = std::string(rest.substr(0, length));
  return absl::StatusOr<UpstreamAnswer>(std::move(answer));
}

}  // namespace

absl::StatusOr<UpstreamAnswer> PostToUpstream(
    int port, const std::string& target,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  Socket socket;
  if (socket.fd() < 0)
    return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(0x7f000001U);  // 127.0.0.1
  if (::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    return absl::UnavailableError(absl::StrCat("connect: ", std::strerror(errno)));
  }
  std::string request = absl::StrCat("POST ", target, " HTTP/1.1\r\nHost: 127.0.0.1\r\n",
                                     "Connection: close\r\nContent-Type: application/json\r\n",
                                     "Content-Length: ", body.size(), "\r\n");
  for (const auto& [name, value] : headers) absl::StrAppend(&request, name, ": ", value, "\r\n");
  absl::StrAppend(&request, "\r\n", body);
  for (size_t sent = 0; sent < request.size();) {
    if (!WaitFor(socket.fd(), POLLOUT, deadline)) {
      return absl::DeadlineExceededError("the upstream did not take the request in time");
    }
    const ssize_t n =
        ::send(socket.fd(), request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::UnavailableError(absl::StrCat("send: ", std::strerror(errno)));
    sent += static_cast<size_t>(n);
  }
  std::string data;
  char buffer[16384];
  while (true) {
    if (!WaitFor(socket.fd(), POLLIN, deadline)) {
      return absl::DeadlineExceededError(
          absl::StrCat("no answer from the upstream within ", timeout.count(), " ms"));
    }
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != ECONNRESET) {
      return absl::UnavailableError(absl::StrCat("recv: ", std::strerror(errno)));
    }
    if (n > 0) data.append(buffer, static_cast<size_t>(n));
    if (auto done = Parse(data, n <= 0)) return *std::move(done);
  }
}

}  // namespace idem::storm
