#include "cli/call_http.h"

#include <fmt/format.h>

#include <algorithm>
// GCC 12 at -O2 reports false "potential null pointer dereference" warnings inside Asio,
// which -Werror would turn into a failed release build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/url/parse.hpp>
#pragma GCC diagnostic pop
#include <cctype>
#include <optional>

#include "absl/status/status.h"

#ifndef IDEM_VERSION
#define IDEM_VERSION "0.0.0"
#endif

namespace idem::cli {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Kind = retry::AttemptResult::Kind;

constexpr uint64_t kBodyLimit = uint64_t{256} << 20;  // 256 MiB: a CLI prints it, not stores it
constexpr uint32_t kHeaderLimit = 64 * 1024;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// The asynchronous steps of one exchange; the io_context runs them on the calling thread.
class Exchange {
 public:
  Exchange(asio::io_context& ioc, const HttpRequest& request, Millis timeout)
      : request_(request), timeout_(timeout), resolver_(ioc), stream_(ioc), watchdog_(ioc) {}

  void Start() {
    if (timeout_.count() > 0) {
      // The stream's own expiry covers connect, write and read; the resolver has none, so a
      // watchdog ends a DNS lookup that would outlive the attempt.
      watchdog_.expires_after(timeout_);
      watchdog_.async_wait([this](beast::error_code ec) {
        if (ec) return;
        watchdog_fired_ = true;
        resolver_.cancel();
        stream_.cancel();
      });
    }
    resolver_.async_resolve(request_.target.host, request_.target.port,
                            [this](beast::error_code ec, tcp::resolver::results_type results) {
                              OnResolve(ec, std::move(results));
                            });
  }

  HttpExchange Take() { return std::move(result_); }

 private:
  void ArmStream() {
    if (timeout_.count() > 0) stream_.expires_at(start_ + timeout_);
  }

  void Fail(Kind kind, std::string error) {
    if (done_) return;
    done_ = true;
    watchdog_.cancel();
    result_.kind = watchdog_fired_ ? Kind::kTimedOut : kind;
    result_.error = watchdog_fired_ || kind == Kind::kTimedOut
                        ? fmt::format("no complete answer within {} ms", timeout_.count())
                        : std::move(error);
  }

  Kind KindOf(beast::error_code ec, Kind otherwise) const {
    return ec == beast::error::timeout || watchdog_fired_ ? Kind::kTimedOut : otherwise;
  }

  void OnResolve(beast::error_code ec, tcp::resolver::results_type results) {
    if (ec) {
      return Fail(
          KindOf(ec, Kind::kConnectFailed),
          fmt::format("could not resolve host '{}': {}", request_.target.host, ec.message()));
    }
    ArmStream();
    stream_.async_connect(results, [this](beast::error_code cec, const tcp::endpoint&) {
      if (cec) {
        return Fail(
            KindOf(cec, Kind::kConnectFailed),
            fmt::format("could not connect to {}: {}", request_.target.authority, cec.message()));
      }
      Send();
    });
  }

  void Send() {
    req_.method_string(request_.method);
    req_.target(request_.target.target);
    req_.version(11);
    req_.set(http::field::host, request_.target.authority);
    req_.set(http::field::user_agent, "idem/" IDEM_VERSION);
    req_.set(http::field::connection, "close");
    for (const auto& [name, value] : request_.headers) req_.set(name, value);
    if (request_.has_body) {
      req_.body() = request_.body;
      req_.prepare_payload();
    }
    ArmStream();
    http::async_write(stream_, req_, [this](beast::error_code ec, std::size_t) {
      if (ec) return Fail(KindOf(ec, Kind::kBroken), "sending the request failed: " + ec.message());
      Receive();
    });
  }

  void Receive() {
    parser_.emplace();
    parser_->body_limit(kBodyLimit);
    parser_->header_limit(kHeaderLimit);
    if (request_.method == "HEAD") parser_->skip(true);
    ArmStream();
    http::async_read(stream_, buffer_, *parser_, [this](beast::error_code ec, std::size_t) {
      if (ec) {
        return Fail(KindOf(ec, Kind::kBroken), "reading the answer failed: " + ec.message());
      }
      Finish(parser_->release());
    });
  }

  void Finish(http::response<http::string_body> res) {
    done_ = true;
    watchdog_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    result_.kind = Kind::kResponse;
    result_.response.status = static_cast<int>(res.result_int());
    result_.response.reason = std::string(res.reason());
    for (const auto& field : res) {
      result_.response.headers.emplace_back(std::string(field.name_string()),
                                            std::string(field.value()));
    }
    result_.response.body = std::move(res.body());
  }

  const HttpRequest& request_;
  const Millis timeout_;
  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  tcp::resolver resolver_;
  beast::tcp_stream stream_;
  asio::steady_timer watchdog_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  std::optional<http::response_parser<http::string_body>> parser_;
  bool watchdog_fired_ = false;
  bool done_ = false;
  HttpExchange result_;
};

}  // namespace

const std::string* HttpResponse::Find(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (EqualsIgnoreCase(n, name)) return &v;
  }
  return nullptr;
}

absl::StatusOr<HttpTarget> ParseHttpUrl(const std::string& url) {
  auto parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a URL; write it in full, such as http://127.0.0.1:8080/orders", url));
  }
  const boost::urls::url_view& u = *parsed;
  if (EqualsIgnoreCase(u.scheme(), "https")) {
    return absl::InvalidArgumentError(
        "https:// is not supported by idem call yet; call the service over http://, for "
        "instance through a local TLS-terminating proxy");
  }
  if (!EqualsIgnoreCase(u.scheme(), "http")) {
    return absl::InvalidArgumentError(
        fmt::format("unsupported URL scheme '{}'; idem call speaks http:// only",
                    std::string_view(u.scheme())));
  }
  if (u.host_address().empty()) {
    return absl::InvalidArgumentError(fmt::format("'{}' names no host", url));
  }
  if (u.has_userinfo()) {
    return absl::InvalidArgumentError(
        "credentials in the URL are not sent; pass them with -H 'Authorization: ...'");
  }
  HttpTarget t;
  t.host = u.host_address();
  t.port = u.has_port() ? std::string(u.port()) : "80";
  t.target = std::string(u.encoded_target());
  if (t.target.empty() || t.target.front() != '/') t.target.insert(0, "/");
  t.authority = std::string(u.encoded_authority());
  return t;
}

HttpExchange SendHttp(const HttpRequest& request, Millis timeout) {
  try {
    asio::io_context ioc;
    Exchange exchange(ioc, request, timeout);
    exchange.Start();
    ioc.run();
    return exchange.Take();
  } catch (const std::exception& e) {
    HttpExchange failed;
    failed.kind = Kind::kBroken;
    failed.error = fmt::format("HTTP exchange failed: {}", e.what());
    return failed;
  }
}

}  // namespace idem::cli
