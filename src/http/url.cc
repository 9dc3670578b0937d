#include "http/url.h"

#include <fmt/format.h>

#include <algorithm>
#include <boost/url/parse.hpp>
#include <cctype>
#include <optional>

#include "absl/status/status.h"

namespace idem::http {
namespace {

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// Boost.URL's port_number() wraps a port above 65535 around; read the digits ourselves.
absl::StatusOr<uint16_t> ParsePort(std::string_view digits, std::string_view url) {
  const auto refuse = [&] {
    return absl::InvalidArgumentError(
        fmt::format("'{}' has port '{}'; a port is a number from 1 to 65535", url, digits));
  };
  if (digits.empty() || digits.size() > 5) return refuse();
  uint32_t port = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return refuse();
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535) return refuse();
  return static_cast<uint16_t>(port);
}

// Returns the port as written in `text` (empty when none). Boost.URL 1.81 accepts
// "http://h:8o8o/x" as port 8 and path "o8o/x", so the port is read from the text itself.
std::optional<std::string_view> RawPort(std::string_view text) {
  size_t start = text.find("//");
  if (start == std::string_view::npos) return std::nullopt;
  start += 2;
  std::string_view authority = text.substr(start, text.find_first_of("/?#", start) - start);
  if (size_t at = authority.rfind('@'); at != std::string_view::npos) {
    authority.remove_prefix(at + 1);
  }
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    authority.remove_prefix(close + 1);
  }
  const size_t colon = authority.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  return authority.substr(colon + 1);
}

}  // namespace

std::string Origin::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", tls() ? "https" : "http", v6 ? "[" : "", host, v6 ? "]" : "",
                     port);
}

absl::StatusOr<Url> ParseUrl(std::string_view text) {
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed) {
    return absl::InvalidArgumentError(fmt::format(
        "'{}' is not a URL; write it in full, such as http://127.0.0.1:8080/orders", text));
  }
  const boost::urls::url_view& u = *parsed;
  Url url;
  if (EqualsIgnoreCase(u.scheme(), "https")) {
    url.origin.scheme = Scheme::kHttps;
  } else if (!EqualsIgnoreCase(u.scheme(), "http")) {
    return absl::InvalidArgumentError(fmt::format(
        "unsupported URL scheme '{}'; use http:// or https://", std::string_view(u.scheme())));
  }
  if (u.host_address().empty()) {
    return absl::InvalidArgumentError(fmt::format("'{}' names no host", text));
  }
  if (u.has_userinfo()) {
    return absl::InvalidArgumentError(
        "credentials in the URL are not sent; pass them with a header: 'Authorization: ...'");
  }
  url.origin.host = u.host_address();
  if (std::optional<std::string_view> raw = RawPort(text); raw || u.has_port()) {
    absl::StatusOr<uint16_t> port = ParsePort(raw ? *raw : std::string_view(u.port()), text);
    if (!port.ok()) return port.status();
    url.origin.port = *port;
  } else {
    url.origin.port = url.origin.tls() ? 443 : 80;
  }
  url.target = std::string(u.encoded_target());
  // Not insert(0, "/"): GCC 12 at -O2 reports a false -Wrestrict overlap in it (release build).
  if (url.target.empty() || url.target.front() != '/') url.target = "/" + url.target;
  url.authority = std::string(u.encoded_authority());
  return url;
}

}  // namespace idem::http
