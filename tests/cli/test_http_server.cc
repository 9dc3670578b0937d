#include "test_http_server.h"

#include <fmt/format.h>

// GCC 12 at -O2 reports false "potential null pointer dereference" warnings inside Asio,
// which -Werror would turn into a failed release build.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

namespace idem::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string Response(int status, const std::string& reason, const std::string& extra,
                     const std::string& body) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\n{}Content-Length: {}\r\n"
      "Connection: close\r\n\r\n{}",
      status, reason, extra, body.size(), body);
}

}  // namespace

TestHttpServer::TestHttpServer()
    : acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
  port_ = acceptor_.local_endpoint().port();
  Accept();
  thread_ = std::thread([this] { ioc_.run(); });
}

TestHttpServer::~TestHttpServer() {
  ioc_.stop();
  thread_.join();
}

std::string TestHttpServer::Url(const std::string& path) const {
  return fmt::format("http://127.0.0.1:{}{}", port_, path);
}

std::vector<RecordedRequest> TestHttpServer::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void TestHttpServer::Accept() {
  acceptor_.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) return;
    Serve(std::make_shared<tcp::socket>(std::move(socket)));
    Accept();
  });
}

void TestHttpServer::Serve(std::shared_ptr<tcp::socket> socket) {
  auto buffer = std::make_shared<beast::flat_buffer>();
  auto req = std::make_shared<http::request<http::string_body>>();
  http::async_read(*socket, *buffer, *req,
                   [this, socket, buffer, req](beast::error_code ec, std::size_t) {
                     if (ec) return;
                     const std::string target(req->target());
                     const size_t q = target.find('?');
                     const std::string path = target.substr(0, q);
                     const std::string query = q == std::string::npos ? "" : target.substr(q + 1);
                     RecordedRequest rec{std::string(req->method_string()), target, "", false, ""};
                     if (auto it = req->find("Idempotency-Key"); it != req->end()) {
                       rec.idempotency_key = std::string(it->value());
                       rec.has_key = true;
                     }
                     if (auto it = req->find("Idem-Deadline-Ms"); it != req->end()) {
                       rec.deadline_ms = std::string(it->value());
                     }
                     std::string answer;
                     {
                       std::lock_guard<std::mutex> lock(mu_);
                       requests_.push_back(rec);
                       if (path == "/slow") held_.push_back(socket);
                     }
                     answer = Answer(path, query);
                     auto out = std::make_shared<std::string>(std::move(answer));
                     const bool hold = path == "/slow";
                     asio::async_write(*socket, asio::buffer(*out),
                                       [socket, out, hold](beast::error_code, size_t) {
                                         if (!hold) {
                                           beast::error_code ignored;
                                           socket->shutdown(tcp::socket::shutdown_send, ignored);
                                         }
                                       });
                   });
}

std::string TestHttpServer::Answer(const std::string& path, const std::string& query) {
  std::lock_guard<std::mutex> lock(mu_);
  if (path == "/ok") return Response(200, "OK", "", "ok");
  if (path == "/flaky") {
    const int fail = query.rfind("fail=", 0) == 0 ? std::stoi(query.substr(5)) : 0;
    if (flaky_seen_++ < fail) return Response(503, "Service Unavailable", "", "down");
    return Response(200, "OK", "", "ok");
  }
  if (path == "/always503") return Response(503, "Service Unavailable", "", "down");
  if (path == "/never") {
    return Response(503, "Service Unavailable", "Idem-Retry: never\r\n", "down for good");
  }
  if (path == "/retry-after") {
    if (retry_after_seen_++ == 0)
      return Response(503, "Service Unavailable", "Retry-After: 1\r\n", "wait");
    return Response(200, "OK", "", "ok");
  }
  if (path == "/bad-request") return Response(400, "Bad Request", "", "bad");
  if (path == "/early-hints-503") {
    return "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
           Response(503, "Service Unavailable", "", "down");
  }
  if (path == "/continue-500") {
    return "HTTP/1.1 100 Continue\r\n\r\n" + Response(500, "Internal Server Error", "", "broken");
  }
  if (path == "/slow") {
    // Promises 1000 bytes and sends 10: the answer never completes.
    return "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789";
  }
  return Response(404, "Not Found", "", "no such path");
}

unsigned short UnusedPort() {
  asio::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

}  // namespace idem::testing
