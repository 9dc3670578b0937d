#include "http/tls.h"

#include <fmt/format.h>

#include "absl/status/status.h"

namespace idem::http {

absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeClientTlsContext(
    const TlsOptions& options) {
  namespace ssl = boost::asio::ssl;
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  ctx->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                       ssl::context::no_sslv3 | ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1,
                   ec);
  if (ec) return absl::InternalError(fmt::format("TLS options: {}", ec.message()));
  ctx->set_verify_mode(ssl::verify_peer, ec);
  if (ec) return absl::InternalError(fmt::format("TLS verify mode: {}", ec.message()));
  if (options.system_store) {
    ctx->set_default_verify_paths(ec);
    if (ec) {
      return absl::InternalError(
          fmt::format("could not load the system certificate store: {}", ec.message()));
    }
  }
  if (!options.ca_file.empty()) {
    ctx->load_verify_file(options.ca_file, ec);
    if (ec) {
      return absl::InvalidArgumentError(
          fmt::format("could not read CA certificates from '{}': {} (a PEM file is expected)",
                      options.ca_file, ec.message()));
    }
  }
  return ctx;
}

}  // namespace idem::http
