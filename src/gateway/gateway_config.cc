#include "gateway/gateway_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/json_pointer.h"
#include "idem/retry/deadline.h"
#include "idem/retry/duration.h"

namespace idem::gateway {

bool IsCredentialField(std::string_view name) {
  for (std::string_view credential : {"Authorization", "Proxy-Authorization", "Cookie"}) {
    if (name.size() == credential.size() &&
        std::equal(name.begin(), name.end(), credential.begin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        }))
      return true;
  }
  return false;
}

namespace {

bool IsTokenChar(char c) {
  if (std::isalnum(static_cast<unsigned char>(c))) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsHeaderName(std::string_view name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), IsTokenChar);
}

absl::Status Bad(std::string_view what) { return absl::InvalidArgumentError(std::string(what)); }

absl::Status ValidateStatuses(const std::vector<int>& statuses, std::string_view field) {
  for (int status : statuses) {
    if (status < 100 || status > 599)
      return Bad(fmt::format("{}: {} is not an HTTP status; use 100-599", field, status));
  }
  return absl::OkStatus();
}

bool IsFraction(double f) { return f >= 0 && f <= 1; }  // false for NaN

absl::Status ValidateAnswerFaults(const Route& route, std::string_view where) {
  for (const auto& [name, value] :
       {std::pair{"lose_answer_fraction", route.lose_answer_fraction},
        std::pair{"delay_answer_fraction", route.delay_answer_fraction}}) {
    if (!IsFraction(value))
      return Bad(fmt::format("{}: {} must be a number from 0 to 1 (0.1: one request in ten)", where,
                             name));
  }
  // A margin for sums such as 0.7 + 0.3 that round above 1.
  if (route.lose_answer_fraction + route.delay_answer_fraction > 1 + 1e-9)
    return Bad(fmt::format(
        "{}: lose_answer_fraction and delay_answer_fraction together must be at most 1", where));
  if (route.delay_answer_fraction > 0 && route.delay_answer <= 0ms)
    return Bad(fmt::format("{}: delay_answer_fraction needs delay_answer, the delay (e.g. \"2s\")",
                           where));
  if (route.delay_answer_fraction == 0 && route.delay_answer != 0ms)
    return Bad(fmt::format("{}: delay_answer needs delay_answer_fraction above 0", where));
  return absl::OkStatus();
}

// A fence header must be a header name of its own: not the key's, nor one the gateway sets on
// every forward or that describes the message or the connection.
absl::Status ValidateFenceHeader(const Route& route, const std::string& where) {
  if (route.fence_header.empty()) return absl::OkStatus();
  if (!IsHeaderName(route.fence_header))
    return Bad(
        fmt::format("{}: fence_header '{}' is not a header name", where, route.fence_header));
  const auto same = [&](std::string_view taken) {
    return std::equal(taken.begin(), taken.end(), route.fence_header.begin(),
                      route.fence_header.end(), [](char a, char b) {
                        return std::tolower(static_cast<unsigned char>(a)) ==
                               std::tolower(static_cast<unsigned char>(b));
                      });
  };
  for (std::string_view taken :
       {std::string_view(route.key_header), std::string_view("Idempotency-Key"),
        retry::kDeadlineHeader, std::string_view("Host"), std::string_view("Content-Length"),
        std::string_view("Content-Type"), std::string_view("Content-Encoding"),
        std::string_view("Transfer-Encoding"), std::string_view("Connection"),
        std::string_view("Upgrade"), std::string_view("TE"), std::string_view("Trailer"),
        std::string_view("Keep-Alive")}) {
    if (same(taken))
      return Bad(
          fmt::format("{}: fence_header '{}' is a header the gateway or HTTP already "
                      "uses; name one of its own, e.g. \"Idempotency-Fence\"",
                      where, route.fence_header));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRoute(const Route& route, Millis lease, size_t index) {
  const std::string where = fmt::format("route {} ({})", index + 1, route.path_prefix);
  if (route.methods.empty())
    return Bad(fmt::format("{}: methods is empty; name at least one", where));
  for (const std::string& m : route.methods) {
    if (!IsHeaderName(m)) return Bad(fmt::format("{}: '{}' is not an HTTP method", where, m));
  }
  if (route.path_prefix.empty() || route.path_prefix.front() != '/')
    return Bad(fmt::format("{}: path prefix must start with '/'", where));
  if (route.key_source == KeySource::kHeader && !IsHeaderName(route.key_header))
    return Bad(fmt::format("{}: key header '{}' is not a header name", where, route.key_header));
  if (route.key_source == KeySource::kJsonPointer) {
    absl::StatusOr<std::vector<std::string>> tokens = core::ParseJsonPointer(route.key_pointer);
    if (!tokens.ok())
      return Bad(fmt::format("{}: key pointer: {}", where, std::string(tokens.status().message())));
  }
  if (route.in_flight == InFlightPolicy::kWait && (route.wait_max <= 0ms || route.wait_max > lease))
    return Bad(fmt::format("{}: wait bound must be above 0 and at most the lease ({})", where,
                           retry::FormatDuration(lease)));
  for (const std::string& h : route.replay_headers) {
    if (!IsHeaderName(h)) return Bad(fmt::format("{}: '{}' is not a header name", where, h));
  }
  for (const std::string& h : route.recover_credentials) {
    if (!IsCredentialField(h))
      return Bad(
          fmt::format("{}: recover_credentials names '{}'; name Authorization, "
                      "Proxy-Authorization or Cookie (other fields are always kept)",
                      where, h));
  }
  if (absl::Status s = ValidateStatuses(route.final_statuses, where + ": final statuses"); !s.ok())
    return s;
  if (route.recover == RecoverMode::kStatus &&
      (route.status_url.empty() || route.status_url.front() != '/' ||
       route.status_url.find("{key}") == std::string::npos))
    return Bad(
        fmt::format("{}: recover = \"status\" needs a status_url starting with '/' that "
                    "holds {{key}}, e.g. \"/charges/by-key/{{key}}\"",
                    where));
  if (route.recover != RecoverMode::kStatus &&
      (!route.status_url.empty() || route.recovered_status != 0))
    return Bad(fmt::format("{}: status_url and recovered_status need recover = \"status\"", where));
  if (absl::Status s = ValidateFenceHeader(route, where); !s.ok()) return s;
  if (route.recovered_status != 0 && (route.recovered_status < 100 || route.recovered_status > 599))
    return Bad(fmt::format("{}: recovered_status {} is not an HTTP status; use 100-599", where,
                           route.recovered_status));
  if (absl::Status s = ValidateAnswerFaults(route, where); !s.ok()) return s;
  return ValidateStatuses(route.transient_statuses, where + ": transient statuses");
}

namespace {

absl::Status ValidateSettings(const GatewayConfig& config) {
  if (config.listen.empty()) return Bad("--listen is missing: give HOST:PORT to listen on");
  if (config.upstream.empty()) return Bad("--upstream is missing: give the URL to forward to");
  if (config.store.empty()) return Bad("--store is missing: give sqlite:PATH or postgresql://...");
  if (config.lease <= 0ms || config.upstream_timeout <= 0ms || config.retention <= 0ms)
    return Bad("--lease, --upstream-timeout and --retention must be above 0");
  if (config.upstream_timeout >= config.lease)
    return Bad(fmt::format(
        "--upstream-timeout ({}) must be shorter than --lease ({}): otherwise a key's lease could "
        "lapse while its upstream call still runs, and a retry would send the request twice",
        retry::FormatDuration(config.upstream_timeout), retry::FormatDuration(config.lease)));
  if (config.max_body <= 0) return Bad("--max-body must be above 0");
  if (config.cache_bytes < 0) return Bad("--cache-bytes must be 0 (no cache) or more");
  if (!config.tenant_header.empty() && !IsHeaderName(config.tenant_header))
    return Bad(fmt::format("--tenant-header '{}' is not a header name", config.tenant_header));
  if (config.io_threads < 0 || config.store_threads < 1 || config.max_connections < 1)
    return Bad("io threads must be 0 or more, store threads and max connections 1 or more");
  if (config.store_writers < 0 || config.store_writers > 64)
    return Bad("--store-writers must be 0 (the store's default) to 64");
  if (config.max_requests_per_connection < 1)
    return Bad("max_requests_per_connection must be 1 or more");
  if (config.record_wait <= 0ms) return Bad("--record-wait must be above 0");
  if (config.max_pending_outcomes < 1 || config.max_pending_bytes < 1)
    return Bad("--max-pending-outcomes and --max-pending-bytes must be 1 or more");
  if (config.recover_interval <= 0ms || config.recover_attempts < 1)
    return Bad("recover_interval must be above 0 and recover_attempts 1 or more");
  return absl::OkStatus();
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

const Route* FindRoute(const GatewayConfig& config, std::string_view method,
                       std::string_view target) {
  static const Route kOptional{};
  static const Route kRequired{.key_required = true};
  const Route& top = config.require_key ? kRequired : kOptional;
  bool covered = false;
  for (const Route& route : config.routes) {
    if (!StartsWith(target, route.path_prefix)) continue;
    covered = true;
    if (std::find(route.methods.begin(), route.methods.end(), method) != route.methods.end())
      return &route;
  }
  if (covered || (!config.routes.empty() && config.unmatched == Unmatched::kPass)) return nullptr;
  return std::find(top.methods.begin(), top.methods.end(), method) != top.methods.end() ? &top
                                                                                        : nullptr;
}

namespace {

std::string DescribeGuard(const Route& route) {
  return fmt::format(
      "guarded (key from {} {}, {})",
      route.key_source == KeySource::kJsonPointer ? "JSON pointer" : "header",
      route.key_source == KeySource::kJsonPointer ? route.key_pointer : route.key_header,
      route.key_required ? "required" : "optional");
}

}  // namespace

std::string DescribeRouting(const GatewayConfig& config) {
  const Route top{.key_required = config.require_key};
  std::vector<std::string> parts;
  for (const Route& route : config.routes)
    parts.push_back(fmt::format("{} {} {}", fmt::join(route.methods, ", "), route.path_prefix,
                                DescribeGuard(route)));
  const std::string others = config.routes.empty() ? "every path" : "every other path";
  if (!config.routes.empty() && config.unmatched == Unmatched::kPass)
    parts.push_back(others + " passes through unguarded (unmatched = \"pass\")");
  else
    parts.push_back(
        fmt::format("{} on {} {}", fmt::join(top.methods, ", "), others, DescribeGuard(top)));
  return fmt::format("{}", fmt::join(parts, "; "));
}

OutcomeClass ClassifyOutcome(const Route& route, int status) {
  // A transient listing wins over a final one; then 409 is transient; then the retry toolkit's
  // default rules.
  auto listed = [status](const std::vector<int>& statuses) {
    return std::find(statuses.begin(), statuses.end(), status) != statuses.end();
  };
  if (listed(route.transient_statuses)) return OutcomeClass::kTransient;
  if (listed(route.final_statuses))
    return status < 400 ? OutcomeClass::kCompleted : OutcomeClass::kFailedFinal;
  if (status == 409) return OutcomeClass::kTransient;
  return OutcomeClassifier().Classify(status);
}

int StoreWriters(const GatewayConfig& config) {
  return config.store_writers > 0 ? config.store_writers : 1;
}

int StoreConnections(const GatewayConfig& config) {
  return std::max(8, StoreWriters(config) + config.store_threads + 2);
}

absl::Status ValidateConfig(const GatewayConfig& config) {
  if (absl::Status s = ValidateSettings(config); !s.ok()) return s;
  for (size_t i = 0; i < config.routes.size(); ++i) {
    const Route& route = config.routes[i];
    if (absl::Status s = ValidateRoute(route, config.lease, i); !s.ok()) return s;
    if (route.HasAnswerFaults() && !config.allow_faults)
      return Bad(fmt::format(
          "route {} ({}): {} answers on purpose, for testing clients' retries; idem serve "
          "refuses it unless started with --allow-faults",
          i + 1, route.path_prefix,
          route.lose_answer_fraction > 0 ? "lose_answer_fraction loses"
                                         : "delay_answer_fraction delays"));
  }
  return absl::OkStatus();
}

std::vector<std::string> RestartSettingsChanged(const GatewayConfig& a, const GatewayConfig& b) {
  std::vector<std::string> changed;
  auto check = [&changed](const char* name, bool same) {
    if (!same) changed.emplace_back(name);
  };
  check("listen", a.listen == b.listen);
  check("upstream", a.upstream == b.upstream);
  check("cacert", a.cacert == b.cacert);
  check("store", a.store == b.store);
  check("admin", a.admin == b.admin);
  check("lease", a.lease == b.lease);
  check("upstream_timeout", a.upstream_timeout == b.upstream_timeout);
  check("retention", a.retention == b.retention);
  check("lock_timeout", a.store_lock_timeout == b.store_lock_timeout);
  check("max_body", a.max_body == b.max_body);
  check("cache_bytes", a.cache_bytes == b.cache_bytes);
  check("tenant_header", a.tenant_header == b.tenant_header);
  check("io_threads", a.io_threads == b.io_threads);
  check("store_threads", a.store_threads == b.store_threads);
  check("store_writers", a.store_writers == b.store_writers);
  check("max_connections", a.max_connections == b.max_connections);
  check("max_requests_per_connection",
        a.max_requests_per_connection == b.max_requests_per_connection);
  check("header_timeout", a.header_timeout == b.header_timeout);
  check("body_timeout", a.body_timeout == b.body_timeout);
  check("drain_timeout", a.drain_timeout == b.drain_timeout);
  check("record_wait", a.record_wait == b.record_wait);
  check("max_pending_outcomes", a.max_pending_outcomes == b.max_pending_outcomes);
  check("max_pending_bytes", a.max_pending_bytes == b.max_pending_bytes);
  check("recover_interval", a.recover_interval == b.recover_interval);
  check("recover_attempts", a.recover_attempts == b.recover_attempts);
  check("log_format", a.log_format == b.log_format);
  return changed;
}

absl::StatusOr<int64_t> ParseByteSize(std::string_view text) {
  int64_t number = 0;
  const char* end = text.data() + text.size();
  auto [rest, ec] = std::from_chars(text.data(), end, number);
  const std::string_view unit(rest, static_cast<size_t>(end - rest));
  struct Unit {
    std::string_view name;
    int64_t bytes;
  };
  static constexpr Unit kUnits[] = {{"", 1},          {"B", 1},           {"KiB", 1 << 10},
                                    {"MiB", 1 << 20}, {"GiB", 1LL << 30}, {"KB", 1000},
                                    {"MB", 1000000},  {"GB", 1000000000}};
  if (ec == std::errc() && number >= 0 && rest != text.data()) {
    for (const Unit& u : kUnits) {
      if (u.name == unit && number <= (int64_t{1} << 40) / u.bytes) return number * u.bytes;
    }
  }
  return absl::InvalidArgumentError(
      fmt::format("'{}' is not a size: write a whole number of bytes with an optional unit, such "
                  "as 512, 64KiB, 1MiB or 1GiB (KB, MB, GB are powers of 1000), at most 1TiB",
                  text));
}

}  // namespace idem::gateway
