#include "store/nats/nats_uri.h"

#include <fmt/format.h>

#include <charconv>

#include "common/conninfo_secrets.h"

namespace idem::nats {
namespace {

constexpr std::string_view kScheme = "nats://";

bool IsBucketName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

absl::StatusOr<int> ParseInt(std::string_view uri, std::string_view name, std::string_view value,
                             int low, int high) {
  int out = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (error != std::errc() || end != value.data() + value.size() || out < low || out > high) {
    return absl::InvalidArgumentError(
        fmt::format("store URI '{}': {}={} must be an integer from {} to {}", RedactConninfo(uri),
                    name, value, low, high));
  }
  return out;
}

// One "HOST:PORT" of the server list; `credentials` ("user:password@" or empty) goes on each.
absl::StatusOr<std::string> ServerUrl(std::string_view uri, std::string_view server,
                                      std::string_view credentials) {
  const size_t colon = server.rfind(':');
  if (server.empty() || colon == 0 || colon == std::string_view::npos) {
    return absl::InvalidArgumentError(
        fmt::format("store URI '{}': server '{}' is not HOST:PORT (write e.g. "
                    "nats://127.0.0.1:4222,127.0.0.1:4223?bucket=idem)",
                    RedactConninfo(uri), server));
  }
  auto port = ParseInt(uri, "port", server.substr(colon + 1), 1, 65535);
  if (!port.ok()) return port.status();
  return fmt::format("nats://{}{}", credentials, server);
}

absl::Status ApplyParameter(std::string_view uri, std::string_view pair, NatsUri& out) {
  const size_t eq = pair.find('=');
  const std::string_view name = pair.substr(0, eq);
  const std::string_view value = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
  if (name == "bucket") {
    if (!IsBucketName(value)) {
      return absl::InvalidArgumentError(
          fmt::format("store URI '{}': bucket '{}' must be 1 to 64 of A-Z a-z 0-9 _ -",
                      RedactConninfo(uri), value));
    }
    out.bucket = std::string(value);
    return absl::OkStatus();
  }
  if (name == "replicas" || name == "shards") {
    auto number = ParseInt(uri, name, value, 1, name == "replicas" ? 5 : kMaxShards);
    if (!number.ok()) return number.status();
    (name == "replicas" ? out.replicas : out.shards) = *number;
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      fmt::format("store URI '{}': unknown parameter '{}' (known: bucket, replicas, shards)",
                  RedactConninfo(uri), name));
}

}  // namespace

absl::StatusOr<NatsUri> ParseNatsUri(std::string_view uri) {
  if (!uri.starts_with(kScheme)) {
    return absl::InvalidArgumentError(
        fmt::format("store URI '{}' does not start with nats://", RedactConninfo(uri)));
  }
  std::string_view rest = uri.substr(kScheme.size());
  std::string_view query;
  if (const size_t q = rest.find('?'); q != std::string_view::npos) {
    query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  std::string_view credentials;
  if (const size_t at = rest.rfind('@'); at != std::string_view::npos) {
    credentials = rest.substr(0, at + 1);
    rest = rest.substr(at + 1);
  }
  NatsUri out;
  while (true) {
    const size_t comma = rest.find(',');
    auto server = ServerUrl(uri, rest.substr(0, comma), credentials);
    if (!server.ok()) return server.status();
    out.servers.push_back(*std::move(server));
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  while (!query.empty()) {
    const size_t amp = query.find('&');
    if (absl::Status s = ApplyParameter(uri, query.substr(0, amp), out); !s.ok()) return s;
    if (amp == std::string_view::npos) break;
    query = query.substr(amp + 1);
  }
  return out;
}

std::string ShardBucket(const NatsUri& uri, int index) {
  if (uri.shards == 1) return uri.bucket;
  return fmt::format("{}-{}", uri.bucket, index);
}

}  // namespace idem::nats
