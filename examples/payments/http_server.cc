#include "http_server.h"

#include <fmt/format.h>

#include <cstdio>
#include <exception>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#pragma GCC diagnostic pop

namespace idem::payments {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

Request ToRequest(const http::request<http::string_body>& in) {
  Request request{.method = std::string(in.method_string()),
                  .target = std::string(in.target()),
                  .headers = {},
                  .body = in.body()};
  for (const auto& field : in) {
    request.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  }
  return request;
}

// Runs the handler on a worker thread; never throws.
Reply Call(const Handler& handler, const Request& request) {
  try {
    return handler(request);
  } catch (const std::exception& e) {
    return {Problem(500, "internal-error", "Internal error",
                    fmt::format("the request failed unexpectedly: {}", e.what()))};
  } catch (...) {
    return {Problem(500, "internal-error", "Internal error", "the request failed unexpectedly")};
  }
}

http::response<http::string_body> ToResponse(const Reply& reply, unsigned version) {
  http::response<http::string_body> out{static_cast<http::status>(reply.response.status), version};
  for (const Header& header : reply.response.headers) out.insert(header.name, header.value);
  if (reply.replayed) out.set("Idempotent-Replayed", "true");
  out.body() = reply.response.body;
  return out;
}

Reply ReadError(const beast::error_code& ec, std::size_t max_body) {
  if (ec == http::error::body_limit) {
    return {Problem(413, "body-too-large", "Body too large",
                    fmt::format("send a body of at most {} bytes", max_body))};
  }
  return {Problem(400, "bad-http", "Malformed HTTP request",
                  fmt::format("the request could not be read: {}", ec.message()))};
}

asio::awaitable<void> ServeConnection(tcp::socket socket, const ServerOptions& options,
                                      const Handler& handler, asio::thread_pool& workers) {
  beast::tcp_stream stream(std::move(socket));
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(options.max_body);
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kTuple);
    if (ec == http::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset) {
      break;
    }
    Reply reply;
    bool keep_alive = false;
    if (ec) {
      reply = ReadError(ec, options.max_body);
    } else {
      const Request request = ToRequest(parser.get());
      keep_alive = parser.get().keep_alive();
      // The handler blocks on the store: it runs on a worker, and this coroutine resumes on the
      // io thread once the reply is ready.
      reply = co_await asio::co_spawn(
          workers, [&]() -> asio::awaitable<Reply> { co_return Call(handler, request); },
          asio::use_awaitable);
    }
    auto response = ToResponse(reply, ec ? 11 : parser.get().version());
    response.keep_alive(keep_alive);
    response.prepare_payload();
    auto [wec, wn] = co_await http::async_write(stream, response, kTuple);
    if (wec || !keep_alive) break;
  }
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
}

asio::awaitable<void> Accept(tcp::acceptor& acceptor, const ServerOptions& options,
                             const Handler& handler, asio::thread_pool& workers) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(kTuple);
    if (ec) co_return;
    asio::co_spawn(acceptor.get_executor(),
                   ServeConnection(std::move(socket), options, handler, workers), asio::detached);
  }
}

absl::Status Listen(tcp::acceptor& acceptor, const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon + 1 == listen.size()) {
    return absl::InvalidArgumentError(
        fmt::format("--listen wants HOST:PORT (e.g. 127.0.0.1:8080), got '{}'", listen));
  }
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  beast::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  const std::string port_text = listen.substr(colon + 1);
  char* end = nullptr;
  const long port = std::strtol(port_text.c_str(), &end, 10);
  if (ec || *end != '\0' || port < 0 || port > 65535) {
    return absl::InvalidArgumentError(fmt::format(
        "--listen wants an IP address and a port 0-65535 (e.g. 127.0.0.1:8080), got '{}'", listen));
  }
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(fmt::format("cannot listen on {}: {}", listen, ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Serve(const ServerOptions& options, const Handler& handler) {
  asio::io_context ioc{1};
  tcp::acceptor acceptor(ioc);
  if (absl::Status listening = Listen(acceptor, options.listen); !listening.ok()) {
    return listening;
  }
  asio::thread_pool workers(static_cast<std::size_t>(options.workers));
  asio::signal_set signals(ioc, SIGTERM, SIGINT);
  signals.async_wait([&](const beast::error_code&, int) { ioc.stop(); });
  asio::co_spawn(ioc, Accept(acceptor, options, handler, workers), asio::detached);
  std::fprintf(stderr, "%s: listening on %s\n", options.name.c_str(), options.listen.c_str());
  ioc.run();
  workers.join();  // a handler under way finishes (its transaction commits or rolls back)
  return absl::OkStatus();
}

}  // namespace idem::payments
