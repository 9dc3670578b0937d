#include "http/errors.h"

#include <fmt/format.h>
#include <openssl/x509.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/error.hpp>
#pragma GCC diagnostic pop

namespace idem::http {

absl::Status ResolveError(const boost::system::error_code& ec, std::string_view host) {
  namespace error = boost::asio::error;
  if (ec == error::host_not_found || ec == error::no_data) {
    return absl::NotFoundError(fmt::format("host '{}' not found (no such name in DNS)", host));
  }
  return absl::UnavailableError(fmt::format("could not resolve host '{}': {}", host, ec.message()));
}

absl::Status ConnectError(const boost::system::error_code& ec, std::string_view origin) {
  return absl::UnavailableError(fmt::format("could not connect to {}: {}", origin, ec.message()));
}

absl::Status HandshakeError(const boost::system::error_code& ec, long verify_result,
                            std::string_view origin) {
  if (verify_result != X509_V_OK) {
    return absl::UnauthenticatedError(fmt::format("TLS: the certificate of {} was refused: {}",
                                                  origin,
                                                  X509_verify_cert_error_string(verify_result)));
  }
  return absl::UnavailableError(
      fmt::format("TLS handshake with {} failed: {}", origin, ec.message()));
}

absl::Status TimeoutError(std::string_view what) {
  return absl::DeadlineExceededError(fmt::format("{}: deadline passed", what));
}

}  // namespace idem::http
