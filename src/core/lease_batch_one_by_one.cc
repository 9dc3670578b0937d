#include "core/lease_batch_one_by_one.h"

#include <utility>

namespace idem {
namespace {

// A claim that meets an in_progress record of the same fingerprint whose lease has passed takes
// it over. A takeover that loses (Aborted: the fence moved or the lease was renewed) or finds the
// record gone (NotFound) looks again; a few rounds settle any race.
LeaseWriteResult Claim(Store& store, const Clock& clock, const LeaseWrite& write) {
  const ClaimRequest request{.scope = write.scope,
                             .fingerprint = write.fingerprint,
                             .owner = write.owner,
                             .lease = write.lease};
  for (int round = 0; round < 3; ++round) {
    absl::StatusOr<ClaimResult> claim = store.Claim(request);
    const int64_t now = clock.NowMillis();
    if (!claim.ok()) return {.status = claim.status(), .now_ms = now};
    KeyRecord& found = claim->record;
    if (claim->claimed) {
      const int64_t until = found.lease_until_ms;
      return {.claimed = true, .record = std::move(found), .lease_until_ms = until, .now_ms = now};
    }
    if (found.state != KeyState::kInProgress || found.fingerprint != write.fingerprint ||
        found.lease_until_ms > now) {
      return {.record = std::move(found), .now_ms = now};
    }
    absl::StatusOr<KeyRecord> taken = store.TakeOver(request, found.fence);
    if (taken.ok()) {
      const int64_t until = taken->lease_until_ms;
      return {.claimed = true,
              .taken_over = true,
              .record = std::move(*taken),
              .lease_until_ms = until,
              .now_ms = now};
    }
    if (!absl::IsAborted(taken.status()) && !absl::IsNotFound(taken.status())) {
      return {.status = taken.status(), .now_ms = now};
    }
  }
  return {.status = absl::UnavailableError(
              "the key changed hands repeatedly while being claimed; retry the request"),
          .now_ms = clock.NowMillis()};
}

// Complete / FailFinal retried after a lost connection: the record already holds this outcome.
absl::Status Finish(Store& store, const LeaseWrite& write, KeyState state) {
  absl::Status written = state == KeyState::kCompleted
                             ? store.Complete(write.scope, write.fence, write.response)
                             : store.FailFinal(write.scope, write.fence, write.response);
  if (!absl::IsAborted(written)) return written;
  absl::StatusOr<KeyRecord> record = store.Get(write.scope);
  if (record.ok() && record->fence == write.fence && record->state == state &&
      record->response == write.response) {
    return absl::OkStatus();
  }
  return written;
}

LeaseWriteResult Apply(Store& store, const Clock& clock, const LeaseWrite& write) {
  switch (write.kind) {
    case LeaseWrite::Kind::kClaim:
      return Claim(store, clock, write);
    case LeaseWrite::Kind::kHeartbeat: {
      const int64_t now = clock.NowMillis();
      absl::Status beat = store.Heartbeat(write.scope, write.fence, write.lease);
      const int64_t until = beat.ok() ? now + write.lease.count() : 0;
      return {.status = std::move(beat), .lease_until_ms = until, .now_ms = now};
    }
    case LeaseWrite::Kind::kComplete:
      return {.status = Finish(store, write, KeyState::kCompleted), .now_ms = clock.NowMillis()};
    case LeaseWrite::Kind::kFailFinal:
      return {.status = Finish(store, write, KeyState::kFailedFinal), .now_ms = clock.NowMillis()};
    case LeaseWrite::Kind::kRelease:
      return {.status = store.Release(write.scope, write.fence), .now_ms = clock.NowMillis()};
  }
  return {.status = absl::InvalidArgumentError("lease write kind out of range")};
}

}  // namespace

absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatchOneByOne(
    Store& store, const Clock& clock, std::span<const LeaseWrite> writes) {
  std::vector<LeaseWriteResult> results;
  results.reserve(writes.size());
  for (const LeaseWrite& write : writes) results.push_back(Apply(store, clock, write));
  return results;
}

}  // namespace idem
