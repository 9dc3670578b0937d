// ZooServer: a thread per connection, so that a flaw's own timing (a race window, a slow
// charge) is what the checker meets, not a queue in front of it.
#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

#include "zoo_api.h"

namespace idem::check_zoo {
namespace {

constexpr int kPollMs = 20;  // how often a blocked loop looks at the stop flag

bool WriteAll(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool ParseRequest(const std::string& in, ZooRequest& req, size_t& used) {
  const size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  req = ZooRequest{};
  size_t line_end = in.find("\r\n");
  const std::string start = in.substr(0, line_end);
  const size_t sp1 = start.find(' '), sp2 = start.rfind(' ');
  req.method = start.substr(0, sp1);
  req.target = sp1 < sp2 ? start.substr(sp1 + 1, sp2 - sp1 - 1) : "";
  size_t length = 0;
  for (size_t at = line_end + 2; at < end; at = line_end + 2) {
    line_end = in.find("\r\n", at);
    const std::string line = in.substr(at, line_end - at);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
    req.headers.emplace_back(line.substr(0, colon), value);
    if (strcasecmp(req.headers.back().first.c_str(), "Content-Length") == 0) {
      length = std::strtoul(value.c_str(), nullptr, 10);
    }
  }
  if (in.size() < end + 4 + length) return false;
  req.body = in.substr(end + 4, length);
  used = end + 4 + length;
  return true;
}

ZooServer::ZooServer(ZooApi& api) : api_(api) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listen_fd_, 256) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return;  // port_ stays 0: the check cannot reach it, and the test says so
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

ZooServer::~ZooServer() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::lock_guard lock(mu_);
  for (std::thread& t : workers_) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void ZooServer::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    std::lock_guard lock(mu_);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

// Reads one request, answers it, closes the connection (every answer says Connection: close).
void ZooServer::Serve(int fd) {
  std::string in;
  ZooRequest req;
  size_t used = 0;
  bool peer_closed = false;
  while (!stop_ && !ParseRequest(in, req, used)) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    char buf[16384];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      peer_closed = true;
      break;
    }
    in.append(buf, static_cast<size_t>(n));
  }
  if (!stop_ && !peer_closed) {
    // Whether the client hung up: it may close a moment after its request is read (a loaded
    // machine), so its close is awaited briefly. Only forget-on-hangup asks.
    auto gone = [fd] {
      pollfd p{fd, POLLIN | POLLRDHUP, 0};
      if (::poll(&p, 1, 100) <= 0) return false;
      char c;
      return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
    };
    const ZooReply reply = api_.Handle(req, gone);
    if (reply.hang) {
      while (!stop_) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, kPollMs) > 0) {
          char buf[512];
          if (::recv(fd, buf, sizeof buf, 0) <= 0) break;
        }
      }
    } else {
      WriteAll(fd, reply.bytes);
    }
  }
  ::close(fd);
}

}  // namespace idem::check_zoo
