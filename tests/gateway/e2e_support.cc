#include "e2e_support.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <utility>
#include <sstream>
#include <thread>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

namespace idem::e2e {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

Child::Child(const std::vector<std::string>& argv, const std::string& log_path) {
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

Child::~Child() {
  if (Running()) {
    Signal(SIGKILL);
    Wait(std::chrono::seconds(10));
  }
}

bool Child::Running() {
  if (pid_ <= 0 || reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

void Child::Signal(int signal) {
  if (Running()) kill(pid_, signal);
}

int Child::Wait(std::chrono::milliseconds bound) {
  Eventually([this] { return !Running(); }, bound);
  if (!reaped_) return -1;
  if (WIFEXITED(status_)) return WEXITSTATUS(status_);
  return 128 + WTERMSIG(status_);
}

namespace {

// The kernel's ephemeral port range (the source ports of outgoing connections).
std::pair<int, int> EphemeralPorts() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 32768, high = 60999;
  if (!(in >> low >> high) || low < 1 || high < low) return {32768, 60999};
  return {low, high};
}

// true when nothing holds 127.0.0.1:`port` now.
bool CanBind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return free;
}

// Claims `port` for this process among all test processes: an exclusive flock on a file named
// after it, held until the process exits (the descriptor is never closed). false when this
// process handed the port out already or another process holds it. Without it two tests running
// at once could draw the same random port, both find it free, and one child fail to listen.
bool ReservePort(int port) {
  static std::mutex mu;
  static std::set<int> handed_out;
  std::lock_guard<std::mutex> lock(mu);
  if (handed_out.count(port) != 0) return false;
  const std::string dir = "/tmp/idem-test-ports";
  (void)mkdir(dir.c_str(), 0777);  // exists already, or open() below says why not
  const std::string path = dir + "/" + std::to_string(port);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return true;  // no lock to take here: the bind check alone decides, as before
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;
  }
  handed_out.insert(port);
  return true;
}

}  // namespace

// A port from the kernel's ephemeral range could be handed to any outgoing connection between
// this check and the child's bind; with many tests connecting at once that happened in CI (the
// child: "cannot listen: Address already in use"). Ports outside the range are only ever taken
// by a bind; ReservePort keeps two tests from drawing the same random port at once.
int FreePort() {
  static std::mt19937 random(std::random_device{}() ^ static_cast<unsigned>(getpid()));
  const auto [low, high] = EphemeralPorts();
  const bool below = low - 1 - 10000 >= 1000;  // room under the range, above well-known ports
  std::uniform_int_distribution<int> pick(below ? 10000 : high + 1, below ? low - 1 : 65535);
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const int port = pick(random);
    if (ReservePort(port) && CanBind(port)) return port;
  }
  return 0;  // nothing free: the child fails to listen, and the test says so
}

std::string Response::Header(const std::string& name) const {
  for (const auto& [n, v] : headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

int Response::HeaderCount(const std::string& name) const {
  int count = 0;
  for (const auto& [n, v] : headers) count += strcasecmp(n.c_str(), name.c_str()) == 0;
  return count;
}

Response Send(int port, const std::string& method, const std::string& target,
              const std::vector<std::pair<std::string, std::string>>& headers,
              const std::string& body) {
  Response out;
  try {
    asio::io_context ioc;
    beast::tcp_stream stream(ioc);
    stream.expires_after(std::chrono::seconds(20));
    stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                           static_cast<unsigned short>(port)));
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [n, v] : headers) req.insert(n, v);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    http::read(stream, buffer, parser);
    auto res = parser.release();
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) out.headers.emplace_back(f.name_string(), f.value());
    out.body = res.body();
  } catch (const std::exception& e) {
    out.status = 0;
    out.error = e.what();
  }
  return out;
}

bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // poll interval, not a wait
  }
}

long JsonNumber(const std::string& json, const std::string& field) {
  const std::string needle = "\"" + field + "\":";
  const size_t at = json.find(needle);
  if (at == std::string::npos) return -1;
  return std::strtol(json.c_str() + at + needle.size(), nullptr, 10);
}

RawConnection::RawConnection(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (fd_ >= 0 && connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd_);
    fd_ = -1;
  }
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) close(fd_);
}

bool RawConnection::Write(const std::string& bytes) {
  size_t done = 0;
  while (fd_ >= 0 && done < bytes.size()) {
    const ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return fd_ >= 0;
}

void RawConnection::ShutdownWrite() {
  if (fd_ >= 0) shutdown(fd_, SHUT_WR);
}

std::string RawConnection::ReadUntilClosed(std::chrono::milliseconds bound) {
  return ReadUntil("", bound);
}

// An empty `text` is never found: reads until the peer closes the connection or `bound` passes.
std::string RawConnection::ReadUntil(const std::string& text, std::chrono::milliseconds bound) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (fd_ >= 0 && !closed_ && (text.empty() || out.find(text) == std::string::npos)) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      closed_ = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

RunResult RunToExit(const std::vector<std::string>& argv, const std::string& scratch_dir,
                    std::chrono::milliseconds bound) {
  static int runs = 0;
  const std::string log = scratch_dir + "/run-" + std::to_string(++runs) + ".log";
  RunResult result;
  {
    Child child(argv, log);
    result.exit_code = child.Wait(bound);
  }
  result.output = ReadFile(log);
  return result;
}

double MetricValue(const std::string& metrics, const std::string& name) {
  std::istringstream lines(metrics);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
        line[name.size()] == ' ')
      return std::strtod(line.c_str() + name.size() + 1, nullptr);
  }
  return -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

}  // namespace idem::e2e
