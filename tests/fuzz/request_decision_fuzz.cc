// Fuzz target: a request's method, target, headers and body through the gateway's decision
// (DecideHead, then DecideGuarded: key, scope, fingerprint), under three configurations.
// Input: "METHOD\nTARGET\nName: value\n...\n\nBODY"; the first byte of METHOD picks the
// configuration. A guarded request must come out with a valid scope and a SHA-256 fingerprint.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "gateway/config_file.h"
#include "gateway/request_decision.h"
#include "idem/key.h"

namespace {

using idem::gateway::GatewayConfig;

std::vector<GatewayConfig> MakeConfigs() {
  GatewayConfig plain;  // the default route: POST and PATCH with an Idempotency-Key
  GatewayConfig tenants;
  tenants.require_key = true;
  tenants.tenant_header = "X-Tenant";
  absl::StatusOr<GatewayConfig> routed = idem::gateway::ParseConfigText(R"(
[[route]]
path_prefix = "/webhooks"
key = "required"
key_header = "webhook-id"

[[route]]
path_prefix = "/events"
key_pointer = "/id"

[[route]]
methods = ["POST", "PUT"]
path_prefix = "/"
)",
                                                                        "fuzz.toml", {});
  if (!routed.ok()) std::abort();  // the fixed configuration must parse
  return {plain, tenants, *routed};
}

// Splits the input; returns false when it has no request line and target.
bool Split(std::string_view in, std::string_view& method, std::string_view& target,
           std::vector<idem::Header>& headers, std::string_view& body) {
  const size_t m = in.find('\n');
  if (m == std::string_view::npos) return false;
  method = in.substr(0, m);
  in.remove_prefix(m + 1);
  const size_t t = in.find('\n');
  target = in.substr(0, t);
  in.remove_prefix(t == std::string_view::npos ? in.size() : t + 1);
  while (!in.empty() && in.front() != '\n') {
    const size_t end = in.find('\n');
    const std::string_view line = in.substr(0, end);
    const size_t colon = line.find(':');
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    headers.push_back({std::string(line.substr(0, colon)), std::string(value)});
    in.remove_prefix(end == std::string_view::npos ? in.size() : end + 1);
  }
  if (!in.empty()) in.remove_prefix(1);
  body = in;
  return true;
}

bool IsLowerHex64(std::string_view s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<GatewayConfig> configs = MakeConfigs();
  std::string_view method, target, body;
  std::vector<idem::Header> headers;
  if (!Split({reinterpret_cast<const char*>(data), size}, method, target, headers, body)) {
    return 0;
  }
  const GatewayConfig& config =
      configs[method.empty() ? 0 : static_cast<unsigned char>(method[0]) % configs.size()];
  const idem::gateway::RequestView request{method, target, &headers, body};
  const idem::gateway::HeadDecision head = idem::gateway::DecideHead(config, request);
  if (head.kind == idem::gateway::HeadDecision::Kind::kReject && head.error.ok()) std::abort();
  if (head.kind != idem::gateway::HeadDecision::Kind::kGuard) return 0;
  if (head.route == nullptr) std::abort();
  absl::StatusOr<std::optional<idem::gateway::GuardedRequest>> guarded =
      idem::gateway::DecideGuarded(config, *head.route, request);
  if (!guarded.ok() || !guarded->has_value()) return 0;
  if (!idem::ValidateScope((*guarded)->scope).ok()) std::abort();
  if (!IsLowerHex64((*guarded)->fingerprint)) std::abort();
  return 0;
}
