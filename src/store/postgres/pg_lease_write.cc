#include "store/postgres/pg_lease_write.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string_view>
#include <tuple>

#include "common/status_macros.h"
#include "core/lease_length.h"
#include "core/stale_fence.h"
#include "core/utf8.h"
#include "idem/key.h"

namespace idem::postgres {
namespace {

absl::Status CheckText(std::string_view name, std::string_view text) {
  if (text.find('\0') == std::string_view::npos &&
      core::FindInvalidUtf8(text) == std::string_view::npos) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      fmt::format("the {} holds a NUL byte or invalid UTF-8; give printable UTF-8 text", name));
}

}  // namespace

absl::Status CheckWrite(const LeaseWrite& write) {
  if (write.kind < LeaseWrite::Kind::kClaim || write.kind > LeaseWrite::Kind::kRelease) {
    return absl::InvalidArgumentError("lease write kind out of range");
  }
  IDEM_RETURN_IF_ERROR(ValidateScope(write.scope));
  if (write.kind == LeaseWrite::Kind::kClaim) {
    IDEM_RETURN_IF_ERROR(CheckText("fingerprint", write.fingerprint));
    IDEM_RETURN_IF_ERROR(CheckText("owner", write.owner));
  }
  if (write.kind == LeaseWrite::Kind::kClaim || write.kind == LeaseWrite::Kind::kHeartbeat) {
    return CheckLeaseLength(write.lease);
  }
  return absl::OkStatus();
}

ClaimParams ClaimAt(const LeaseWrite& write, int64_t now, Millis retention) {
  const int64_t until = now + write.lease.count();
  return {.scope = write.scope,
          .fingerprint = write.fingerprint,
          .owner = write.owner,
          .now_ms = now,
          .lease_until_ms = until,
          .expires_ms = std::max(now + retention.count(), until),
          .note = &write.response,
          .claim_nonce = write.claim_nonce};
}

KeyState FinalState(const LeaseWrite& write) {
  return write.kind == LeaseWrite::Kind::kComplete ? KeyState::kCompleted : KeyState::kFailedFinal;
}

absl::Status UnchangedFinish(const LeaseWrite& write, KeyState state,
                             const std::optional<KeyRecord>& found, const BatchRules& rules) {
  if (rules.idempotent_finish && found.has_value() && found->fence == write.fence &&
      found->state == state && found->response == write.response) {
    return absl::OkStatus();
  }
  return idem::StaleFenceError("outcome", write.scope, write.fence, found);
}

std::vector<size_t> LockOrder(std::span<const LeaseWrite> writes) {
  std::vector<size_t> order(writes.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Scope& x = writes[a].scope;
    const Scope& y = writes[b].scope;
    return std::tie(x.tenant, x.key) < std::tie(y.tenant, y.key);
  });
  return order;
}

bool RepeatsAScope(std::span<const LeaseWrite> writes, std::span<const size_t> order) {
  for (size_t n = 1; n < order.size(); ++n) {
    const Scope& x = writes[order[n - 1]].scope;
    const Scope& y = writes[order[n]].scope;
    if (x.tenant == y.tenant && x.key == y.key) return true;
  }
  return false;
}

std::string ScopeId(const Scope& scope) {
  std::string id = scope.tenant;
  id.push_back('\0');
  id += scope.key;
  return id;
}

}  // namespace idem::postgres
