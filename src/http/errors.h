// Internal to src/http: turns Asio, Beast and OpenSSL error codes into absl::Status with idem's
// fixed meanings, worded for a person. Transient (worth a retry): Unavailable, DeadlineExceeded.
//
// Thread-safety: pure functions.
#ifndef IDEM_HTTP_ERRORS_H_
#define IDEM_HTTP_ERRORS_H_

#include <boost/system/error_code.hpp>
#include <string_view>

#include "absl/status/status.h"

namespace idem::http {

// A failed name lookup: NotFound when the name does not exist, Unavailable otherwise.
absl::Status ResolveError(const boost::system::error_code& ec, std::string_view host);
// A failed TCP connect (refused, unreachable): Unavailable.
absl::Status ConnectError(const boost::system::error_code& ec, std::string_view origin);
// A failed TLS handshake: Unauthenticated when the certificate failed verification
// (`verify_result` is OpenSSL's X509 verify result), Unavailable otherwise.
absl::Status HandshakeError(const boost::system::error_code& ec, long verify_result,
                            std::string_view origin);
// Returns "no complete answer within N ms"-style DeadlineExceeded for `what`.
absl::Status TimeoutError(std::string_view what);

}  // namespace idem::http

#endif  // IDEM_HTTP_ERRORS_H_
