#include "scripted_upstream.h"

#include <netinet/in.h>
#include <poll.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

namespace idem::e2e {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr int kPollMs = 20;  // how often a blocked loop looks at the stop flag

// The value of a Content-Length header in `head`, 0 when absent.
size_t ContentLength(const std::string& head) {
  size_t at = 0;
  while ((at = head.find("\r\n", at)) != std::string::npos) {
    at += 2;
    if (strncasecmp(head.c_str() + at, "content-length:", 15) == 0)
      return std::strtoul(head.c_str() + at + 15, nullptr, 10);
  }
  return 0;
}

bool WriteAll(int fd, const std::string& bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

ScriptedUpstream::ScriptedUpstream(Script script, std::chrono::milliseconds idle_close)
    : script_(std::move(script)), idle_close_(idle_close) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // the kernel picks; bound before anyone is told the port
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
      ::listen(listen_fd_, 64) != 0 ||
      ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return;  // port_ stays 0: the gateway cannot reach it, and the test says so
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

ScriptedUpstream::~ScriptedUpstream() {
  stop_ = true;
  if (acceptor_.joinable()) acceptor_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (std::thread& t : workers_) t.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::string ScriptedUpstream::Answer(const std::string& status, const std::string& body,
                                     const std::string& headers) {
  return "HTTP/1.1 " + status + "\r\n" + headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

void ScriptedUpstream::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int fd = ::accept(listen_fd_, nullptr, nullptr);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard<std::mutex> lock(mu_);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

// Reads requests one after the other and writes the script's answers until the peer closes,
// the script closes, the connection idles past idle_close_, or the upstream stops.
void ScriptedUpstream::Serve(int fd) {
  std::string in;
  auto idle_since = std::chrono::steady_clock::now();
  bool answered = false;
  std::optional<Reply> reply;  // the current request's, once its head is read
  while (!stop_) {
    const size_t end = in.find("\r\n\r\n");
    if (end != std::string::npos) {
      const std::string head = in.substr(0, end + 2);
      if (!reply) {
        ++requests_;
        reply = script_(head);
      }
      const size_t length = end + 4 + ContentLength(head);
      if (reply->before_body || in.size() >= length) {
        if (!WriteAll(fd, reply->bytes) || reply->close || reply->before_body) break;
        in.erase(0, length);
        reply.reset();
        idle_since = std::chrono::steady_clock::now();
        answered = true;
        continue;
      }
    }
    if (answered && in.empty() && idle_close_.count() > 0 &&
        std::chrono::steady_clock::now() - idle_since >= idle_close_) {
      ++idle_closes_;
      break;
    }
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    char buf[16384];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
}

struct KeepAliveClient::State {
  asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  bool connected = false;
};

KeepAliveClient::KeepAliveClient(int port) : state_(std::make_unique<State>()) {
  beast::error_code ec;
  state_->stream.expires_after(std::chrono::seconds(5));
  state_->stream.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"),
                                                 static_cast<unsigned short>(port)),
                         ec);
  state_->connected = !ec;
}

KeepAliveClient::~KeepAliveClient() = default;

// Beast's synchronous operations ignore tcp_stream's deadline: asynchronous ones on a private
// io_context, run to completion, honour it.
Response KeepAliveClient::Send(const std::string& method, const std::string& target,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               const std::string& body, std::chrono::milliseconds bound) {
  Response out;
  if (!state_->connected) {
    out.error = "not connected";
    return out;
  }
  beast::error_code ec;
  auto run = [&] {
    state_->ioc.restart();
    state_->ioc.run();
    return !ec;
  };
  auto fail = [&] {
    out.error = ec.message();
    state_->connected = false;
    return out;
  };
  state_->stream.expires_after(bound);
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1");
  for (const auto& [n, v] : headers) req.insert(n, v);
  req.body() = body;
  req.prepare_payload();
  http::async_write(state_->stream, req, [&](beast::error_code e, size_t) { ec = e; });
  if (!run()) return fail();
  for (;;) {  // interim answers (1xx) precede the final one
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 << 20);
    if (req.method() == http::verb::head) parser.skip(true);
    http::async_read(state_->stream, state_->buffer, parser,
                     [&](beast::error_code e, size_t) { ec = e; });
    if (!run()) return fail();
    if (parser.get().result_int() / 100 == 1) continue;
    auto res = parser.release();
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) out.headers.emplace_back(f.name_string(), f.value());
    out.body = res.body();
    return out;
  }
}

}  // namespace idem::e2e
