// TLS client settings for idem's HTTP client: an OpenSSL context that verifies servers against
// the system's certificate store, plus optional extra CA certificates.
//
// Thread-safety: the returned context is read-only after creation and may be shared by any
// number of connections on any threads.
#ifndef IDEM_HTTP_TLS_H_
#define IDEM_HTTP_TLS_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ssl/context.hpp>
#pragma GCC diagnostic pop
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace idem::http {

struct TlsOptions {
  // PEM file of CA certificates trusted in addition to the system store (default: none).
  std::string ca_file;
  // Whether to trust the system store (/etc/ssl/certs; default true).
  bool system_store = true;
};

// Returns a TLS 1.2+ client context whose connections verify the server's certificate chain
// (peer verification on; the pool adds SNI and host name checks per connection), or
// InvalidArgument when `ca_file` cannot be read or holds no certificate.
absl::StatusOr<std::shared_ptr<boost::asio::ssl::context>> MakeClientTlsContext(
    const TlsOptions& options);

}  // namespace idem::http

#endif  // IDEM_HTTP_TLS_H_
