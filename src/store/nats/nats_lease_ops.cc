#include "store/nats/nats_lease_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>
#include <utility>

#include "common/status_macros.h"
#include "core/retried_write.h"
#include "core/stale_fence.h"
#include "idem/key.h"

namespace idem::nats {
namespace {

// Conditional writes that lose to another writer re-read and decide again; each loss means
// someone else's write went through, so this bound is only hit under extreme contention.
constexpr int kMaxAttempts = 64;

absl::Status Contended(const Scope& scope) {
  return absl::UnavailableError(
      fmt::format("key '{}' of tenant '{}' changed under {} consecutive writes; try again",
                  scope.key, scope.tenant, kMaxAttempts));
}

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
  live.lease_until_ms = now + lease.count();
  live.updated_ms = now;
  live.expires_ms = std::max(live.expires_ms, live.lease_until_ms);
  return live;
}

LeaseWriteResult Claim(Keyspace& keyspace, const LeaseRules& rules, const LeaseWrite& write,
                       bool batch) {
  LeaseWriteResult result;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    const int64_t now = rules.clock.NowMillis();
    result.now_ms = now;
    Current current;
    if (attempt > 0) {  // the first attempt is a Create: most keys are new
      absl::StatusOr<Current> loaded = keyspace.Load(write.scope);
      if (!loaded.ok()) return {.status = loaded.status(), .now_ms = now};
      current = *std::move(loaded);
    }
    KeyRecord next;
    if (Live(current.record, now)) {
      const KeyRecord& live = *current.record;
      const bool lapsed = live.state == KeyState::kInProgress && live.lease_until_ms <= now &&
                          live.fingerprint == write.fingerprint;
      if (!batch || !lapsed) {
        // A retry of a claim that went through (its acknowledgement was lost): ours.
        if (IsOwnClaim(write, live)) return OwnClaimResult(live, now);
        result.record = live;
        return result;
      }
      next = TakenOver(live, write.owner, write.lease, now, write.response);
      result.taken_over = true;
    } else {
      next = FreshClaim(write, now, rules.retention);
      result.taken_over = false;
    }
    absl::StatusOr<std::optional<KeyRecord>> stored = keyspace.Put(
        next, current.revision, current.record.has_value() ? current.record->fence : 0);
    if (!stored.ok()) return {.status = stored.status(), .now_ms = now};
    if (stored->has_value()) {
      result.claimed = true;
      result.record = **std::move(stored);
      result.lease_until_ms = result.record.lease_until_ms;
      return result;
    }
  }
  return {.status = Contended(write.scope), .now_ms = result.now_ms};
}

// Heartbeat, Complete, FailFinal, Release: only while the record is live, in_progress and held
// with the write's fence.
LeaseWriteResult Fenced(Keyspace& keyspace, const LeaseRules& rules, const LeaseWrite& write,
                        bool batch) {
  const bool finish =
      write.kind == LeaseWrite::Kind::kComplete || write.kind == LeaseWrite::Kind::kFailFinal;
  const KeyState final_state =
      write.kind == LeaseWrite::Kind::kComplete ? KeyState::kCompleted : KeyState::kFailedFinal;
  int64_t now = rules.clock.NowMillis();
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    now = rules.clock.NowMillis();
    // First try the record this store last wrote or read, if it shows the write's claim (its
    // conditional write proves it current); any other answer comes from a read.
    std::optional<Current> remembered;
    if (attempt == 0) remembered = keyspace.Remembered(write.scope);
    const bool usable = remembered.has_value() && Live(remembered->record, now) &&
                        remembered->record->fence == write.fence;
    absl::StatusOr<Current> current =
        usable ? absl::StatusOr<Current>(*std::move(remembered)) : keyspace.Load(write.scope);
    if (!current.ok()) return {.status = current.status(), .now_ms = now};
    std::optional<KeyRecord>& record = current->record;
    if (!Live(record, now)) record.reset();
    if (!record.has_value() || record->state != KeyState::kInProgress ||
        record->fence != write.fence) {
      if (batch && finish && record.has_value() && record->fence == write.fence &&
          record->state == final_state && record->response == write.response) {
        return {.now_ms = now};  // the same outcome again: a retry of a write that went through
      }
      if (write.kind == LeaseWrite::Kind::kRelease) {
        return {.status = UnchangedRelease(write, record), .now_ms = now};
      }
      return {
          .status = StaleFenceError(OperationName(write.kind), write.scope, write.fence, record),
          .now_ms = now};
    }
    LeaseWriteResult result{.now_ms = now};
    if (write.kind == LeaseWrite::Kind::kRelease) {
      absl::StatusOr<bool> removed = keyspace.Remove(write.scope, current->revision, false);
      if (!removed.ok()) return {.status = removed.status(), .now_ms = now};
      if (*removed) return result;
      continue;
    }
    KeyRecord next = *record;
    next.updated_ms = now;
    if (finish) {
      next.state = final_state;
      next.response = write.response;
      next.expires_ms = now + rules.retention.count();
    } else {
      next.lease_until_ms = now + write.lease.count();
      next.expires_ms = std::max(next.expires_ms, next.lease_until_ms);
      result.lease_until_ms = next.lease_until_ms;
    }
    absl::StatusOr<std::optional<KeyRecord>> stored = keyspace.Put(next, current->revision);
    if (!stored.ok()) return {.status = stored.status(), .now_ms = now};
    if (stored->has_value()) return result;
  }
  return {.status = Contended(write.scope), .now_ms = now};
}

absl::Status CheckLease(Millis lease) {
  if (lease.count() > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      fmt::format("a lease must be positive, got {} ms", lease.count()));
}

}  // namespace

LeaseWriteResult ApplyLeaseWrite(Keyspace& keyspace, const LeaseRules& rules,
                                 const LeaseWrite& write, bool batch) {
  if (absl::Status valid = ValidateScope(write.scope); !valid.ok()) {
    return {.status = valid, .now_ms = rules.clock.NowMillis()};
  }
  const bool leased =
      write.kind == LeaseWrite::Kind::kClaim || write.kind == LeaseWrite::Kind::kHeartbeat;
  if (absl::Status lease = CheckLease(write.lease); leased && !lease.ok()) {
    return {.status = lease, .now_ms = rules.clock.NowMillis()};
  }
  if (write.kind == LeaseWrite::Kind::kClaim) return Claim(keyspace, rules, write, batch);
  return Fenced(keyspace, rules, write, batch);
}

void CreateFirstClaims(Keyspace& keyspace, const LeaseRules& rules,
                       std::span<const LeaseWrite> writes, std::vector<LeaseWriteResult>& results,
                       std::vector<bool>& settled) {
  const int64_t now = rules.clock.NowMillis();
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<size_t> chosen;
  std::vector<KeyRecord> records;
  for (size_t i = 0; i < writes.size(); ++i) {
    const LeaseWrite& w = writes[i];
    const bool first = seen.emplace(w.scope.tenant, w.scope.key).second;
    if (!first || w.kind != LeaseWrite::Kind::kClaim || w.lease.count() <= 0 ||
        !ValidateScope(w.scope).ok()) {
      continue;
    }
    chosen.push_back(i);
    records.push_back(FreshClaim(w, now, rules.retention));
  }
  if (chosen.empty()) return;
  auto created = keyspace.CreateMany(std::move(records));
  if (!created.ok()) return;  // each claim then goes the single way
  for (size_t c = 0; c < chosen.size(); ++c) {
    absl::StatusOr<std::optional<KeyRecord>>& one = (*created)[c];
    LeaseWriteResult& result = results[chosen[c]];
    if (one.ok() && !one->has_value()) continue;  // the key exists: decided by a read
    settled[chosen[c]] = true;
    result.now_ms = now;
    if (!one.ok()) {
      result.status = one.status();
      continue;
    }
    result.claimed = true;
    result.record = **std::move(one);
    result.lease_until_ms = result.record.lease_until_ms;
  }
}

absl::StatusOr<KeyRecord> TakeOverKey(Keyspace& keyspace, const LeaseRules& rules,
                                      const ClaimRequest& request, int64_t expected_fence) {
  IDEM_RETURN_IF_ERROR(ValidateScope(request.scope));
  IDEM_RETURN_IF_ERROR(CheckLease(request.lease));
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
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
