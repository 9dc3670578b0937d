#include "store/nats/nats_lease_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "common/status_macros.h"
#include "core/lease_length.h"
#include "core/retried_write.h"
#include "core/stale_fence.h"
#include "idem/key.h"

namespace idem::nats {
namespace {

bool Live(const std::optional<KeyRecord>& record, int64_t now) {
  return record.has_value() && record->expires_ms > now;
}

std::string_view OperationName(LeaseWrite::Kind kind) {
  switch (kind) {
    case LeaseWrite::Kind::kClaim:
      return "claim";
    case LeaseWrite::Kind::kHeartbeat:
      return "heartbeat";
    case LeaseWrite::Kind::kComplete:
      return "complete";
    case LeaseWrite::Kind::kFailFinal:
      return "fail_final";
    case LeaseWrite::Kind::kRelease:
      return "release";
  }
  return "write";
}

// The record of a new claim (fence 0: a new fence, drawn by Keyspace::Put).
KeyRecord FreshClaim(const LeaseWrite& write, int64_t now, Millis retention) {
  KeyRecord record;
  record.scope = write.scope;
  record.fingerprint = write.fingerprint;
  record.state = KeyState::kInProgress;
  record.owner = write.owner;
  record.claim_nonce = write.claim_nonce;
  record.lease_until_ms = now + write.lease.count();
  record.created_ms = now;
  record.updated_ms = now;
  record.expires_ms = std::max(now + retention.count(), record.lease_until_ms);
  record.response = write.response;  // the claim's note
  return record;
}

// `live` taken over by `owner` for `lease` (fence 0: a new fence above live's, drawn by Put),
// with the taker's claim note (an empty one clears the lapsed holder's).
KeyRecord TakenOver(KeyRecord live, const std::string& owner, Millis lease, int64_t now,
                    StoredResponse note = {}) {
  live.response = std::move(note);
  live.fence = 0;
  live.owner = owner;
  live.claim_nonce.clear();  // the lapsed holder's is not the taker's
  live.lease_until_ms = now + lease.count();
  live.updated_ms = now;
  live.expires_ms = std::max(live.expires_ms, live.lease_until_ms);
  return live;
}

LeaseStep DecideClaim(const LeaseRules& rules, const LeaseWrite& write, bool batch,
                      const Current& current, int64_t now) {
  LeaseStep step;
  step.result.now_ms = now;
  KeyRecord next;
  if (Live(current.record, now)) {
    const KeyRecord& live = *current.record;
    const bool lapsed = live.state == KeyState::kInProgress && live.lease_until_ms <= now &&
                        live.fingerprint == write.fingerprint;
    if (!batch || !lapsed) {
      step.decided = true;
      // A retry of a claim that went through (its acknowledgement was lost): ours.
      if (IsOwnClaim(write, live)) {
        step.result = OwnClaimResult(live, now);
      } else {
        step.result.record = live;
      }
      return step;
    }
    next = TakenOver(live, write.owner, write.lease, now, write.response);
    next.claim_nonce = write.claim_nonce;
    step.result.taken_over = true;
  } else {
    next = FreshClaim(write, now, rules.retention);
  }
  step.change = {.record = std::move(next),
                 .expected = current.revision,
                 .replaced_fence = current.last_fence()};
  return step;
}

// Heartbeat, Complete, FailFinal, Release: only while the record is live, in_progress and held
// with the write's fence.
LeaseStep DecideFenced(const LeaseRules& rules, const LeaseWrite& write, bool batch,
                       Current current, int64_t now) {
  const bool finish =
      write.kind == LeaseWrite::Kind::kComplete || write.kind == LeaseWrite::Kind::kFailFinal;
  const KeyState final_state =
      write.kind == LeaseWrite::Kind::kComplete ? KeyState::kCompleted : KeyState::kFailedFinal;
  LeaseStep step;
  step.result.now_ms = now;
  std::optional<KeyRecord>& record = current.record;
  if (!Live(record, now)) record.reset();
  if (!record.has_value() || record->state != KeyState::kInProgress ||
      record->fence != write.fence) {
    step.decided = true;
    if (batch && finish && record.has_value() && record->fence == write.fence &&
        record->state == final_state && record->response == write.response) {
      return step;  // the same outcome again: a retry of a write that went through
    }
    step.result.status = write.kind == LeaseWrite::Kind::kRelease
                             ? UnchangedRelease(write, record)
                             : StaleFenceError(OperationName(write.kind), write.scope, write.fence,
                                               record);
    return step;
  }
  step.change.expected = current.revision;
  if (write.kind == LeaseWrite::Kind::kRelease) {
    step.change.kind = Keyspace::Change::Kind::kDelete;
    step.change.record.scope = write.scope;
    step.change.record.fence = write.fence;  // kept by the marker: the next claim draws above it
    return step;
  }
  KeyRecord next = *std::move(record);
  next.updated_ms = now;
  if (finish) {
    next.state = final_state;
    next.response = write.response;
    next.expires_ms = now + rules.retention.count();
  } else {
    next.lease_until_ms = now + write.lease.count();
    next.expires_ms = std::max(next.expires_ms, next.lease_until_ms);
    step.result.lease_until_ms = next.lease_until_ms;
  }
  step.change.record = std::move(next);
  return step;
}

}  // namespace

absl::Status CheckLeaseWrite(const LeaseWrite& write) {
  IDEM_RETURN_IF_ERROR(ValidateScope(write.scope));
  if (write.kind == LeaseWrite::Kind::kClaim || write.kind == LeaseWrite::Kind::kHeartbeat) {
    return CheckLeaseLength(write.lease);
  }
  return absl::OkStatus();
}

bool Usable(const std::optional<Current>& remembered, const LeaseWrite& write, int64_t now) {
  return remembered.has_value() && Live(remembered->record, now) &&
         remembered->record->fence == write.fence;
}

LeaseStep DecideLeaseWrite(const LeaseRules& rules, const LeaseWrite& write, bool batch,
                           Current current, int64_t now) {
  if (write.kind == LeaseWrite::Kind::kClaim) {
    return DecideClaim(rules, write, batch, current, now);
  }
  return DecideFenced(rules, write, batch, std::move(current), now);
}

absl::Status Contended(const Scope& scope) {
  return absl::UnavailableError(
      fmt::format("key '{}' of tenant '{}' changed under {} consecutive writes; try again",
                  scope.key, scope.tenant, kMaxLeaseAttempts));
}

absl::StatusOr<KeyRecord> TakeOverKey(Keyspace& keyspace, const LeaseRules& rules,
                                      const ClaimRequest& request, int64_t expected_fence) {
  IDEM_RETURN_IF_ERROR(ValidateScope(request.scope));
  IDEM_RETURN_IF_ERROR(CheckLeaseLength(request.lease));
  for (int attempt = 0; attempt < kMaxLeaseAttempts; ++attempt) {
    const int64_t now = rules.clock.NowMillis();
    IDEM_ASSIGN_OR_RETURN(Current current, keyspace.Load(request.scope));
    if (!Live(current.record, now)) {
      return absl::NotFoundError(
          fmt::format("key '{}' of tenant '{}' has no live record to take over; claim it instead",
                      request.scope.key, request.scope.tenant));
    }
    const KeyRecord& live = *current.record;
    if (live.fingerprint != request.fingerprint) return TakeOverMismatchError(request.scope);
    if (live.state != KeyState::kInProgress || live.fence != expected_fence ||
        live.lease_until_ms > now) {
      return absl::AbortedError(fmt::format(
          "cannot take over key '{}' of tenant '{}' at fence {}: it is {} with fence {}, lease "
          "until {} (now {}); someone else holds or finished it",
          request.scope.key, request.scope.tenant, expected_fence, KeyStateName(live.state),
          live.fence, live.lease_until_ms, now));
    }
    IDEM_ASSIGN_OR_RETURN(std::optional<KeyRecord> stored,
                          keyspace.Put(TakenOver(live, request.owner, request.lease, now),
                                       current.revision, live.fence));
    if (stored.has_value()) return *std::move(stored);
  }
  return Contended(request.scope);
}

}  // namespace idem::nats
