#include "gateway/request_head.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/hex_digit.h"

namespace idem::gateway {

// Returns why the request's body length is ambiguous, OK when it is not. Where a front end and the
// server behind it read a body's end differently, a client can hide a request in another's body
// (request smuggling, RFC 9112 §6.1, §11.2). The parser already refuses a Content-Length beside
// chunked and two different Content-Lengths, but takes a Transfer-Encoding whose last coding is not
// one chunked (`gzip`, `chunked, gzip`, `chunked, chunked`) for "no body", where the upstream may
// read one; and an HTTP/1.0 message's Transfer-Encoding cannot be trusted at all.
absl::Status AmbiguousFraming(const http::request_parser<http::empty_body>& head) {
  const http::request_header<>& h = head.get();
  if (h.find(http::field::transfer_encoding) == h.end()) return absl::OkStatus();
  if (h.version() < 11)
    return absl::InvalidArgumentError(
        "an HTTP/1.0 request cannot carry Transfer-Encoding; send its body with Content-Length");
  if (!head.chunked())
    return absl::InvalidArgumentError(
        "the request's Transfer-Encoding does not end in a single chunked, so its body length is "
        "ambiguous; send Content-Length or Transfer-Encoding: chunked");
  return absl::OkStatus();
}

// Returns `path` in the one spelling routes match: percent-encoded unreserved characters decoded
// and dot segments removed (RFC 3986 §6.2.2.2, §5.2.4), which name the same resource. Otherwise
// "/%63harges" or "/x/../charges" would pass by a route for "/charges" that an upstream
// normalising its paths serves.
std::string NormalPath(std::string_view path) {
  std::string decoded;
  decoded.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '%' && i + 2 < path.size()) {
      const int high = HexDigitValue(path[i + 1]);
      const int low = HexDigitValue(path[i + 2]);
      const char c = static_cast<char>(high * 16 + low);
      if (high >= 0 && low >= 0 &&
          (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
           c == '~')) {
        decoded.push_back(c);
        i += 2;
        continue;
      }
    }
    decoded.push_back(path[i]);
  }
  std::string out;
  std::string_view in = decoded;
  const auto drop_last_segment = [&out] { out.erase(std::min(out.size(), out.rfind('/'))); };
  while (!in.empty()) {
    if (in.starts_with("../")) {
      in.remove_prefix(3);
    } else if (in.starts_with("./") || in.starts_with("/./")) {
      in.remove_prefix(2);
    } else if (in == "/.") {
      in = "/";
    } else if (in.starts_with("/../")) {
      in.remove_prefix(3);
      drop_last_segment();
    } else if (in == "/..") {
      in = "/";
      drop_last_segment();
    } else if (in == "." || in == "..") {
      in = {};
    } else {
      const size_t end = in.find('/', 1);
      out.append(in.substr(0, end));
      in.remove_prefix(std::min(end, in.size()));
    }
  }
  return out.empty() ? "/" : out;
}

// Reads the request's target as its path (origin-form, "/path?query") in the spelling routes
// match (NormalPath); returns why it cannot. Routes match paths and the upstream's path prefix is
// put before the target, so a target without its leading "/" would pass by a route that requires
// a key or reach past the prefix ("/api" + "-internal"). The absolute-form ("http://host/path"),
// which a server must accept (RFC 9112 §3.2.2), is rewritten to its path; OPTIONS's "*" is passed
// on; anything else is refused.
absl::Status ToOriginForm(http::request_header<>& h) {
  std::string_view target = h.target();
  if (target == "*" && h.method() == http::verb::options) return absl::OkStatus();
  std::string origin;
  if (!target.starts_with('/')) {
    const size_t scheme = target.find("://");
    if (scheme == std::string_view::npos || !(beast::iequals(target.substr(0, scheme), "http") ||
                                              beast::iequals(target.substr(0, scheme), "https")))
      return absl::InvalidArgumentError(
          "the request target is not a path; send it as /path?query (or as http://host/path)");
    const std::string_view rest = target.substr(scheme + 3);
    const size_t path = rest.find_first_of("/?");
    // Built by push_back/append rather than from a literal: g++ 12 at -O2 reports a false
    // -Wrestrict overlap for the literal's assignment once Asio is compiled separately.
    if (path == std::string_view::npos || rest[path] == '?') origin.push_back('/');
    if (path != std::string_view::npos) origin.append(rest.substr(path));
    target = origin;
  }
  const size_t query = target.find('?');
  const std::string_view path = target.substr(0, query);
  if (path.find('%') == std::string_view::npos && path.find("/.") == std::string_view::npos) {
    if (!origin.empty()) h.target(origin);
    return absl::OkStatus();
  }
  std::string normal = NormalPath(path);
  if (query != std::string_view::npos) normal.append(target.substr(query));
  h.target(normal);
  return absl::OkStatus();
}

absl::Status GuardableCoding(const http::request_header<>& h) {
  for (auto [it, end] = h.equal_range(http::field::transfer_encoding); it != end; ++it) {
    for (const std::string_view coding : http::token_list(it->value())) {
      if (!beast::iequals(coding, "chunked"))
        return absl::UnimplementedError(fmt::format(
            "the gateway does not decode the transfer coding '{}' of a guarded request's body; "
            "send the body as it is, with Content-Length or Transfer-Encoding: chunked",
            coding));
    }
  }
  return absl::OkStatus();
}

}  // namespace idem::gateway
