// URL parsing for idem's HTTP client: http:// and https:// URLs split into what a connection
// (origin) and a request (target, Host header) need.
//
// Thread-safety: pure functions and plain values; safe from any thread.
#ifndef IDEM_HTTP_URL_H_
#define IDEM_HTTP_URL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace idem::http {

enum class Scheme { kHttp, kHttps };

// Where connections go: scheme, host and port. Two URLs with equal origins share a pool.
struct Origin {
  Scheme scheme = Scheme::kHttp;
  std::string host;  // name or address, without brackets
  uint16_t port = 80;

  bool tls() const { return scheme == Scheme::kHttps; }
  // Returns "http://host:port" (IPv6 hosts in brackets), for messages and pool keys.
  std::string ToString() const;
  friend bool operator==(const Origin&, const Origin&) = default;
};

struct Url {
  Origin origin;
  std::string target;     // path and query, "/" at least; never the fragment
  std::string authority;  // the Host header: host[:port] as written in the URL
};

// Returns the parts of an http:// or https:// URL, or InvalidArgument naming what is wrong:
// not a URL, another scheme, no host, user info in the URL, a port that is not a number from 1
// to 65535 (a larger one is refused, never wrapped around).
absl::StatusOr<Url> ParseUrl(std::string_view text);

}  // namespace idem::http

#endif  // IDEM_HTTP_URL_H_
