// Internal: an outcome (or a release) the key store did not take at once (it was down,
// restarting, locked, or its answer was lost). Once the upstream has answered, that answer is the
// key's answer: the gateway keeps it in memory, keeps the key held (the LeaseTicker goes on
// heartbeating it) and retries the write with backoff and full jitter until it is recorded, or
// the store says the fence moved (someone took the key over after its lease lapsed: the outcome
// is dropped and logged), or the process stops. A retried complete or fail_final is idempotent in
// the store (same fence and outcome: OK), so a first write that was applied although it was
// reported failed is simply confirmed; a retried release that finds the key absent or no longer
// this holder's counts as released.
//
// The client's request waits for the recording up to a bound (AwaitSettled); the retries go on
// after it has been answered.
//
// Thread-safety: a PendingOutcome belongs to the io thread that started it; KeepAndRetry and
// AwaitSettled run there.
#ifndef IDEM_GATEWAY_PENDING_OUTCOME_H_
#define IDEM_GATEWAY_PENDING_OUTCOME_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/asio_includes.h"
#include "gateway/gateway_context.h"

namespace idem::gateway {

struct PendingOutcome {
  enum class State {
    kPending,   // the write is still being retried
    kRecorded,  // the outcome is recorded (a release: the key is released)
    kLost,      // the fence moved: someone else holds the key; this outcome is dropped
    kRefused,   // the store refuses even the 502 that stood for it (OutOfRange): dropped
  };
  State state = State::kPending;
  int retries = 0;
  // Set when the store refused the outcome for ever (OutOfRange: larger than it keeps for one
  // key): what is written instead, the 502 upstream-answer-not-kept, and the client's answer.
  std::optional<StoredResponse> written_instead;
  // Timers of the requests waiting for the write to settle; each is cancelled when it does.
  std::vector<asio::steady_timer*> waiters;
};

// Keeps `op` (kComplete, kFailFinal or kRelease of the key this process holds under `ticket`,
// whose first write failed with a status other than Aborted) and retries it on the calling io
// thread until it settles (an outcome the store refuses for ever, OutOfRange, is replaced by the
// 502 upstream-answer-not-kept, never retried), then forgets the key (InFlight::ForgetKey) and
// decrements metrics.keys_in_flight. A recorded outcome is cached for replays under
// `fingerprint`. Counts it in metrics.outcomes_pending / pending_bytes meanwhile, and each retry
// in record_retries.
// REQUIRES: runs on an io thread (a coroutine's executor is the thread's).
std::shared_ptr<PendingOutcome> KeepAndRetry(GatewayContext& ctx,
                                             const asio::any_io_executor& executor, KeyOp op,
                                             uint64_t ticket, std::string fingerprint);

// Waits until `pending` settles or `until` passes; returns its state then.
asio::awaitable<PendingOutcome::State> AwaitSettled(std::shared_ptr<PendingOutcome> pending,
                                                    std::chrono::steady_clock::time_point until);

// Whether a new guarded request may be forwarded: false once metrics.outcomes_pending or
// pending_bytes has reached its bound in `config`.
bool RoomForOutcomes(const GatewayContext& ctx);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_PENDING_OUTCOME_H_
