#include "gateway/request_decision.h"

#include <fmt/format.h>
#include <strings.h>

#include "core/json_pointer.h"
#include "core/json_value.h"
#include "idem/fingerprint.h"
#include "idem/key.h"

namespace idem::gateway {
namespace {

constexpr int kMaxJsonDepth = 64;

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// The key header's one value, nullopt when absent. InvalidArgument when sent more than once.
absl::StatusOr<std::optional<std::string_view>> SingleHeader(const std::vector<Header>& headers,
                                                             std::string_view name) {
  // Counted in place rather than through HeaderValues: no vector for the usual one value.
  std::optional<std::string_view> first;
  size_t count = 0;
  for (const Header& h : headers) {
    if (!SameName(h.name, name)) continue;
    if (count++ == 0) first = h.value;
  }
  if (count > 1)
    return absl::InvalidArgumentError(fmt::format(
        "the {} header was sent {} times; send it exactly once, with one value", name, count));
  return first;
}

absl::Status MissingKey(const Route& route) {
  if (route.key_source == KeySource::kJsonPointer)
    return absl::InvalidArgumentError(fmt::format(
        "this route requires an idempotency key at JSON pointer {} of the body; send a JSON body "
        "with a string there",
        route.key_pointer));
  return absl::InvalidArgumentError(
      fmt::format("this route requires an idempotency key; send a {} header, e.g. {}: \"{}\"",
                  route.key_header, route.key_header, "4f3c2a1e-order-1234"));
}

// The key from a header: nullopt when absent.
absl::StatusOr<std::optional<std::string>> KeyFromHeader(const Route& route,
                                                         const std::vector<Header>& headers) {
  absl::StatusOr<std::optional<std::string_view>> value = SingleHeader(headers, route.key_header);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::nullopt;
  absl::StatusOr<std::string> key = ParseIdempotencyKey(**value);
  if (!key.ok())
    return absl::InvalidArgumentError(fmt::format(
        "the {} header is malformed: {}", route.key_header, std::string(key.status().message())));
  return std::optional<std::string>(std::move(*key));
}

// The key from the body at route.key_pointer: nullopt when the body is not JSON or holds nothing
// there.
absl::StatusOr<std::optional<std::string>> KeyFromBody(const Route& route, std::string_view body) {
  absl::StatusOr<core::JsonValue> doc = core::ParseJson(body, kMaxJsonDepth);
  absl::StatusOr<std::vector<std::string>> tokens = core::ParseJsonPointer(route.key_pointer);
  if (!doc.ok() || !tokens.ok()) return std::nullopt;
  const core::JsonValue* at = &*doc;
  for (const std::string& token : *tokens) {
    const core::JsonValue* next = nullptr;
    for (const core::JsonMember& m : at->members) {
      if (m.name == token) next = &m.value;
    }
    if (next == nullptr) return std::nullopt;
    at = next;
  }
  if (at->kind != core::JsonValue::Kind::kString)
    return absl::InvalidArgumentError(
        fmt::format("the idempotency key at JSON pointer {} must be a string", route.key_pointer));
  if (absl::Status s = ValidateKey(at->string); !s.ok())
    return absl::InvalidArgumentError(fmt::format("the idempotency key at JSON pointer {}: {}",
                                                  route.key_pointer, std::string(s.message())));
  return std::optional<std::string>(at->string);
}

// The tenant named by the tenant header's `value`, in a namespace of its own: the value as sent,
// but "header:" and the value when the value is empty (the global scope's name) or starts like a
// name another source gives ("auth:", the Authorization namespace) or like such an escaped value
// ("header:"). So no header value names a credential's scope or the global one, and the header
// tenants stored before there were namespaces ("acme") keep their names.
std::string HeaderTenant(std::string_view value) {
  if (!value.empty() && !value.starts_with("auth:") && !value.starts_with("header:"))
    return std::string(value);
  std::string tenant = "header:";
  tenant.append(value);
  return tenant;
}

}  // namespace

std::vector<std::string_view> HeaderValues(const std::vector<Header>& headers,
                                           std::string_view name) {
  std::vector<std::string_view> values;
  for (const Header& h : headers) {
    if (SameName(h.name, name)) values.push_back(h.value);
  }
  return values;
}

HeadDecision DecideHead(const GatewayConfig& config, const RequestView& request) {
  const Route* route = FindRoute(config, request.method, request.target);
  if (route == nullptr) return {};
  if (route->key_source == KeySource::kJsonPointer)
    return {.kind = HeadDecision::Kind::kGuard, .route = route};
  absl::StatusOr<std::optional<std::string>> key = KeyFromHeader(*route, *request.headers);
  if (!key.ok()) return {.kind = HeadDecision::Kind::kReject, .error = key.status()};
  if (!key->has_value()) {
    if (!route->key_required) return {};
    return {.kind = HeadDecision::Kind::kReject, .error = MissingKey(*route)};
  }
  return {.kind = HeadDecision::Kind::kGuard, .route = route};
}

absl::StatusOr<std::string> TenantOf(const GatewayConfig& config,
                                     const std::vector<Header>& headers) {
  if (!config.tenant_header.empty()) {
    absl::StatusOr<std::optional<std::string_view>> tenant =
        SingleHeader(headers, config.tenant_header);
    if (!tenant.ok()) return tenant.status();
    if (tenant->has_value()) return HeaderTenant(**tenant);
  }
  absl::StatusOr<std::optional<std::string_view>> auth = SingleHeader(headers, "Authorization");
  if (!auth.ok()) return auth.status();
  if (auth->has_value()) return "auth:" + Sha256Hex(**auth);
  return std::string();
}

absl::StatusOr<std::optional<GuardedRequest>> DecideGuarded(const GatewayConfig& config,
                                                            const Route& route,
                                                            const RequestView& request) {
  absl::StatusOr<std::optional<std::string>> key = route.key_source == KeySource::kJsonPointer
                                                       ? KeyFromBody(route, request.body)
                                                       : KeyFromHeader(route, *request.headers);
  if (!key.ok()) return key.status();
  if (!key->has_value()) {
    if (route.key_required) return MissingKey(route);
    return std::nullopt;
  }
  absl::StatusOr<std::string> tenant = TenantOf(config, *request.headers);
  if (!tenant.ok()) return tenant.status();
  GuardedRequest guarded{.scope = {.tenant = std::move(*tenant), .key = std::move(**key)}};
  if (absl::Status s = ValidateScope(guarded.scope); !s.ok())
    return absl::InvalidArgumentError(
        fmt::format("the tenant is malformed: {}", std::string(s.message())));
  guarded.fingerprint =
      Fingerprint({.method = request.method, .target = request.target, .body = request.body});
  return std::optional<GuardedRequest>(std::move(guarded));
}

std::string FormatKeyHeader(std::string_view key) {
  std::string out = "\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace idem::gateway
