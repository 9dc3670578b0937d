#include "http/listen.h"

#include <fmt/format.h>

#include <charconv>

namespace idem::http {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

absl::StatusOr<tcp::endpoint> ParseEndpoint(std::string_view text, std::string_view flag) {
  const size_t colon = text.rfind(':');
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        fmt::format("{} '{}': {}; write HOST:PORT with a numeric address, e.g. 127.0.0.1:8080",
                    flag, text, why));
  };
  if (colon == std::string_view::npos) return bad("no port");
  std::string host(text.substr(0, colon));
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  int port = -1;
  const std::string_view port_text = text.substr(colon + 1);
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535)
    return bad("the port must be 0-65535");
  boost::system::error_code address_ec;
  const auto address = asio::ip::make_address(host.empty() ? "0.0.0.0" : host, address_ec);
  if (address_ec) return bad("the host must be a numeric IP address");
  return tcp::endpoint(address, static_cast<unsigned short>(port));
}

absl::Status Listen(tcp::acceptor& acceptor, const tcp::endpoint& endpoint, std::string_view flag) {
  boost::system::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return absl::UnavailableError(fmt::format(
        "{} {}: cannot listen: {}", flag,
        fmt::format("{}:{}", endpoint.address().to_string(), endpoint.port()), ec.message()));
  return absl::OkStatus();
}

std::string AddressOf(const tcp::acceptor& acceptor) {
  if (!acceptor.is_open()) return "";
  boost::system::error_code ec;
  const tcp::endpoint e = acceptor.local_endpoint(ec);
  if (ec) return "";
  return e.address().is_v6() ? fmt::format("[{}]:{}", e.address().to_string(), e.port())
                             : fmt::format("{}:{}", e.address().to_string(), e.port());
}

}  // namespace idem::http
