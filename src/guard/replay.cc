#include "guard/replay.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>

namespace idem::guard_internal {
namespace {

// The form of idem::Fingerprint's output: 64 lowercase hex digits.
bool IsHexFingerprint(std::string_view text) {
  return text.size() == 64 && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

absl::StatusOr<GuardResult> ReplayOf(const KeyRecord& record, std::string_view fingerprint) {
  if (record.fingerprint != fingerprint && IsHexFingerprint(fingerprint) &&
      !IsHexFingerprint(record.fingerprint)) {
    // No request has such a fingerprint: the stored record was damaged, not the key reused.
    return absl::DataLossError(fmt::format(
        "the stored record of idempotency key '{}' holds a fingerprint that no request has (not "
        "64 lowercase hex digits): the store is corrupt; check it (sqlite: URI option "
        "integrity=full) and restore it from a backup",
        record.scope.key));
  }
  if (record.fingerprint != fingerprint) {
    return absl::FailedPreconditionError(fmt::format(
        "idempotency key '{}' was first used with a different request; a key names one request: "
        "send a new key for a new request",
        record.scope.key));
  }
  if (record.state == KeyState::kInProgress) {
    return absl::AbortedError(fmt::format(
        "idempotency key '{}' is still being processed by an earlier request; retry later",
        record.scope.key));
  }
  return GuardResult{.response = record.response, .state = record.state, .replayed = true};
}

std::string DefaultOwner() {
  static std::atomic<uint64_t> next{0};
  char host[64] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  return fmt::format("{}:{}:{}", host, getpid(), next.fetch_add(1));
}

}  // namespace idem::guard_internal
