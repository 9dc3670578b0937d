// Internal: the gateway's asynchronous door to the key store. An io thread never blocks on the
// store: it submits one operation and gets the result posted back to its own executor.
//
// One write (claim, heartbeat, complete, fail_final, release) is one Store::LeaseWrite with the
// meaning Store::ApplyLeaseBatch gives it (a claim takes over a lapsed lease of the same
// fingerprint itself; complete and fail_final are idempotent for the same fence and outcome), so
// an implementation groups many callers' writes into one transaction and one durable commit, and
// reports each result only once its write is durable. A get is a read: it never waits for, nor
// takes, the store's write lock.
//
// Thread-safety: Submit may be called from any thread at once.
#ifndef IDEM_GATEWAY_KEY_SERVICE_H_
#define IDEM_GATEWAY_KEY_SERVICE_H_

#include <cstdint>
#include <memory>

// GCC 12 at -O2 reports false "potential null pointer dereference" warnings inside Asio.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/any_io_executor.hpp>
#pragma GCC diagnostic pop

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "idem/record.h"
#include "idem/store.h"

namespace idem::gateway {

struct KeyOp {
  enum class Kind { kClaim, kHeartbeat, kComplete, kFailFinal, kRelease, kGet };
  Kind kind = Kind::kGet;
  Scope scope;
  std::string fingerprint;  // kClaim
  std::string owner;        // kClaim
  Millis lease{0};          // kClaim, kHeartbeat
  int64_t fence = 0;        // kHeartbeat, kComplete, kFailFinal, kRelease
  StoredResponse response;  // kComplete, kFailFinal
  std::string claim_nonce;  // kClaim: LeaseWrite::claim_nonce, drawn per claim attempt
};

struct KeyOpResult {
  // The store call's status (Store's meanings: Aborted when the fence moved, Unavailable when the
  // store is busy or down or the batch holding this write failed, NotFound for a kGet of an
  // absent key).
  absl::Status status;
  // kClaim: true when this caller holds the key now (a new claim or a takeover of a lapsed
  // lease); record is then its in_progress record, else the live record that blocked it.
  bool claimed = false;
  bool taken_over = false;
  KeyRecord record;  // kClaim, kGet
  // kClaim when claimed, kHeartbeat when OK: the lease's new end, by the store's clock.
  int64_t lease_until_ms = 0;
  // Writes: the store's clock when the write ran; compare lease times with it, never with the
  // gateway's own clock. 0 for a kGet (a read carries no store time).
  int64_t now_ms = 0;
  // kComplete, kFailFinal: the op's response handed back whatever the status, so a caller that
  // needs it after the write (the replay cache, a retry) moves it into the op, not a copy.
  StoredResponse sent;
};

class KeyService {
 public:
  // Move-only, so a caller hands over its own (move-only) completion handler as is: a copyable
  // std::function would need it shared, two allocations per store call.
  using Done = absl::AnyInvocable<void(KeyOpResult)>;

  KeyService() = default;
  KeyService(const KeyService&) = delete;
  KeyService& operator=(const KeyService&) = delete;
  virtual ~KeyService() = default;

  // Runs `op` off the caller's thread and posts `done(result)` to `executor`. After Shutdown,
  // completes at once with Unavailable.
  virtual void Submit(KeyOp op, boost::asio::any_io_executor executor, Done done) = 0;

  // Finishes the operations already submitted, then stops. Idempotent.
  virtual void Shutdown() = 0;
};

// Returns `op` as the store write it stands for. REQUIRES: op.kind != kGet.
LeaseWrite ToLeaseWrite(KeyOp op);

// Returns the KeyOpResult of a write's LeaseWriteResult.
KeyOpResult FromLeaseWriteResult(LeaseWriteResult result);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_KEY_SERVICE_H_
