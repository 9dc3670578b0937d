#include "http/admin_server.h"

#include <fmt/format.h>

#include <cstdio>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#pragma GCC diagnostic pop

#include "http/listen.h"
#include "http/stream.h"

namespace idem::http {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;

constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);
constexpr std::chrono::seconds kAdminTimeout{5};

asio::awaitable<bhttp::response<bhttp::string_body>> Answer(
    const AdminHandler& handler, const bhttp::request<bhttp::string_body>& request) {
  bhttp::response<bhttp::string_body> res{bhttp::status::ok, request.version()};
  res.set(bhttp::field::content_type, "text/plain; charset=utf-8");
  if (request.method() != bhttp::verb::get && request.method() != bhttp::verb::head) {
    res.result(bhttp::status::method_not_allowed);
    res.set(bhttp::field::allow, "GET, HEAD");
    res.body() = "the admin endpoints answer GET only\n";
    co_return res;
  }
  const std::string_view target = request.target();
  AdminReply reply = co_await handler(target.substr(0, target.find('?')));
  res.result(reply.status);
  res.set(bhttp::field::content_type, reply.content_type);
  res.body() = std::move(reply.body);
  co_return res;
}

asio::awaitable<void> ServeAdmin(std::shared_ptr<const AdminHandler> handler, tcp::socket socket) {
  Stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    bhttp::request_parser<bhttp::string_body> parser;
    parser.body_limit(8192);
    stream.tcp().expires_after(kAdminTimeout);
    auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, kTuple);
    if (ec) break;
    bhttp::request<bhttp::string_body> request = parser.release();
    bhttp::response<bhttp::string_body> res = co_await Answer(*handler, request);
    res.keep_alive(request.keep_alive());
    res.prepare_payload();
    if (request.method() == bhttp::verb::head) res.body().clear();
    stream.tcp().expires_after(kAdminTimeout);
    auto [wec, wn] = co_await bhttp::async_write(stream, res, kTuple);
    if (wec || !request.keep_alive()) break;
  }
  stream.Close();
}

void ReportException(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "idem: admin connection failed: %s\n", ex.what());
  } catch (...) {
    std::fprintf(stderr, "idem: admin connection failed\n");
  }
}

}  // namespace

asio::awaitable<void> AcceptAdmin(tcp::acceptor& acceptor,
                                  std::shared_ptr<const AdminHandler> handler) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    asio::co_spawn(acceptor.get_executor(), ServeAdmin(handler, std::move(socket)),
                   ReportException);
  }
}

absl::StatusOr<std::unique_ptr<AdminServer>> AdminServer::Start(std::string_view address,
                                                                std::string_view flag,
                                                                AdminHandler handler) {
  absl::StatusOr<tcp::endpoint> endpoint = ParseEndpoint(address, flag);
  if (!endpoint.ok()) return endpoint.status();
  std::unique_ptr<AdminServer> server(new AdminServer());
  server->acceptor_ = std::make_unique<tcp::acceptor>(server->ioc_);
  if (absl::Status s = Listen(*server->acceptor_, *endpoint, flag); !s.ok()) return s;
  server->address_ = AddressOf(*server->acceptor_);
  asio::co_spawn(
      server->ioc_,
      AcceptAdmin(*server->acceptor_, std::make_shared<const AdminHandler>(std::move(handler))),
      ReportException);
  server->thread_ = std::thread([ioc = &server->ioc_] {
    auto guard = asio::make_work_guard(*ioc);
    ioc->run();
  });
  return server;
}

AdminServer::~AdminServer() {
  // Connections still open are dropped with the io_context (their frames are destroyed).
  asio::post(ioc_, [this] {
    beast::error_code ignored;
    acceptor_->close(ignored);
    ioc_.stop();
  });
  if (thread_.joinable()) thread_.join();
}

}  // namespace idem::http
