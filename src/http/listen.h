// Server-side helpers shared by idem's listeners (idem serve's --listen and --admin, idem relay's
// --admin): parsing HOST:PORT, opening a listening socket, naming the address it got.
//
// Thread-safety: free functions; an acceptor is used as Asio says (one thread at a time).
#ifndef IDEM_HTTP_LISTEN_H_
#define IDEM_HTTP_LISTEN_H_

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/ip/tcp.hpp>
#pragma GCC diagnostic pop
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idem::http {

// Parses HOST:PORT with a numeric host ([v6]:PORT too; an empty host is 0.0.0.0; port 0 picks a
// free port). Errors: InvalidArgument naming `flag` and saying how to write it.
absl::StatusOr<boost::asio::ip::tcp::endpoint> ParseEndpoint(std::string_view text,
                                                             std::string_view flag);

// Opens, binds (SO_REUSEADDR) and listens. Errors: Unavailable naming `flag` and the address.
absl::Status Listen(boost::asio::ip::tcp::acceptor& acceptor,
                    const boost::asio::ip::tcp::endpoint& endpoint, std::string_view flag);

// "host:port" ("[v6]:port") the acceptor listens on, or "" when it is not open.
std::string AddressOf(const boost::asio::ip::tcp::acceptor& acceptor);

}  // namespace idem::http

#endif  // IDEM_HTTP_LISTEN_H_
