#include "idem/lease_recoverer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <exception>
#include <utility>
#include <vector>

#include "guard/replay.h"
#include "idem/uuid.h"

namespace idem {
namespace {

// The count of recovery attempts a claim has had, kept as the last field of its note (no HTTP
// field name starts with ':', so it never meets one of the claimer's). persisted: never rename.
constexpr char kAttemptsField[] = ":idem-recoveries";
constexpr int64_t kPage = 500;  // lapsed claims read per List call

// Takes the attempts field out of `note` and returns the count it held (0 when none).
int TakeAttempts(StoredResponse& note) {
  if (note.headers.empty() || note.headers.back().name != kAttemptsField) return 0;
  const std::string value = std::move(note.headers.back().value);
  note.headers.pop_back();
  int attempts = 0;
  std::from_chars(value.data(), value.data() + value.size(), attempts);
  return std::max(attempts, 0);
}

StoredResponse WithAttempts(StoredResponse note, int attempts) {
  note.headers.push_back({kAttemptsField, std::to_string(attempts)});
  return note;
}

// Applies one write, and once more when its answer was Unavailable (the write may have gone
// through with its answer lost; the store resolves the repeat by reading the record).
LeaseWriteResult ApplyOne(Store& store, const LeaseWrite& write) {
  LeaseWriteResult result;
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<std::vector<LeaseWriteResult>> results = store.ApplyLeaseBatch({&write, 1});
    if (!results.ok()) {
      result = {.status = results.status()};
    } else if (results->size() != 1) {
      return {.status = absl::InternalError("a batch of one write gave no result")};
    } else {
      result = std::move((*results)[0]);
    }
    if (!absl::IsUnavailable(result.status)) break;
  }
  return result;
}

// Calls `resolver`; an exception becomes Internal (it never leaves the pass).
absl::StatusOr<Resolution> Ask(const Resolver& resolver, const LapsedClaim& claim) {
  try {
    return resolver(claim);
  } catch (const std::exception& e) {
    return absl::InternalError(fmt::format("the resolver threw: {}", e.what()));
  } catch (...) {
    return absl::InternalError("the resolver threw something that is not a std::exception");
  }
}

}  // namespace

Resolution Resolution::Completed(StoredResponse response) {
  return {.kind = Kind::kCompleted, .response = std::move(response)};
}
Resolution Resolution::FailedFinal(StoredResponse response) {
  return {.kind = Kind::kFailedFinal, .response = std::move(response)};
}
Resolution Resolution::NeverHappened() { return {.kind = Kind::kNeverHappened}; }
Resolution Resolution::Later(Millis hold) { return {.kind = Kind::kLater, .hold = hold}; }

LeaseRecoverer::LeaseRecoverer(Store& store, RecoverOptions options)
    : store_(store), options_(std::move(options)) {
  if (options_.owner.empty()) options_.owner = guard_internal::DefaultOwner();
  const uint64_t seed =
      options_.seed != 0
          ? options_.seed
          : static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  rng_.seed(seed);
}

Millis LeaseRecoverer::BackoffHold(int attempt) {
  std::lock_guard<std::mutex> lock(rng_mu_);
  const Millis hold =
      retry::ComputeDelay(options_.backoff, std::max(attempt - 1, 0), options_.backoff.base, rng_);
  return std::max(hold, Millis(1));
}

absl::StatusOr<RecoveryReport> LeaseRecoverer::RecoverLapsedOnce(const Resolver& resolver) {
  if (options_.lease <= Millis(0)) {
    return absl::InvalidArgumentError(
        fmt::format("the recoverer's lease must be positive, not {} ms", options_.lease.count()));
  }
  if (absl::Status valid = retry::ValidateBackoffOptions(options_.backoff); !valid.ok()) {
    return valid;
  }
  RecoveryReport report;
  KeyQuery query{.tenant = options_.tenant, .limit = kPage, .lapsed = true};
  for (;;) {
    absl::StatusOr<std::vector<KeyRecord>> lapsed = store_.List(query);
    if (!lapsed.ok()) return lapsed.status();
    for (KeyRecord& record : *lapsed) {
      if (options_.stop.stop_requested()) return report;
      if (options_.filter) {
        KeyRecord as_claimed = record;
        TakeAttempts(as_claimed.response);
        if (!options_.filter(as_claimed)) continue;
      }
      ++report.lapsed;
      Recover(record, resolver, report);
    }
    if (static_cast<int64_t>(lapsed->size()) < query.limit) return report;
    query.after = lapsed->back().scope;
  }
}

void LeaseRecoverer::Recover(const KeyRecord& record, const Resolver& resolver,
                             RecoveryReport& report) {
  LapsedClaim claim{.scope = record.scope,
                    .fingerprint = record.fingerprint,
                    .note = record.response,
                    .lapsed_owner = record.owner,
                    .created_ms = record.created_ms};
  claim.attempt = TakeAttempts(claim.note) + 1;
  // The same claim a retry of the request would make, so that one claimer wins the key; its
  // nonce is this takeover's alone, so a claim whose answer was lost is found as its own.
  const LeaseWrite take{.kind = LeaseWrite::Kind::kClaim,
                        .scope = record.scope,
                        .fingerprint = record.fingerprint,
                        .owner = fmt::format("{}/recover-{}", options_.owner, ++takeovers_),
                        .lease = options_.lease,
                        .response = WithAttempts(claim.note, claim.attempt),
                        .claim_nonce = NewClaimNonce()};
  LeaseWriteResult held = ApplyOne(store_, take);
  if (!held.status.ok()) {
    ++report.skipped;
    report.last_error = held.status;
    return;
  }
  if (!held.claimed) {  // finished, or live again: another holder has it
    ++report.skipped;
    return;
  }
  LeaseWrite settle{.scope = record.scope, .fence = held.record.fence};
  if (!held.taken_over) {
    // The key had gone (released, swept or expired) and this claim made it anew: give it back.
    settle.kind = LeaseWrite::Kind::kRelease;
    if (absl::Status released = ApplyOne(store_, settle).status; !released.ok())
      report.last_error = released;
    ++report.skipped;
    return;
  }
  claim.fence = held.record.fence;
  claim.lease_until_ms = held.lease_until_ms;
  absl::StatusOr<Resolution> answer = Ask(resolver, claim);
  if (!answer.ok()) {
    ++report.resolver_errors;
    report.last_error = answer.status();
    answer = Resolution::Later();
  }
  int64_t* counted = &report.later;
  switch (answer->kind) {
    case Resolution::Kind::kCompleted:
      settle.kind = LeaseWrite::Kind::kComplete;
      settle.response = std::move(answer->response);
      counted = &report.completed;
      break;
    case Resolution::Kind::kFailedFinal:
      settle.kind = LeaseWrite::Kind::kFailFinal;
      settle.response = std::move(answer->response);
      counted = &report.failed_final;
      break;
    case Resolution::Kind::kNeverHappened:
      settle.kind = LeaseWrite::Kind::kRelease;
      counted = &report.never_happened;
      break;
    case Resolution::Kind::kLater:
      // Held until the hold ends: then the lease lapses and any recoverer's pass asks again.
      settle.kind = LeaseWrite::Kind::kHeartbeat;
      settle.lease = answer->hold > Millis(0) ? answer->hold : BackoffHold(claim.attempt);
      break;
  }
  if (absl::Status written = ApplyOne(store_, settle).status; !written.ok()) {
    report.last_error = written;
    counted = &report.unsettled;
  }
  ++*counted;
}

}  // namespace idem
