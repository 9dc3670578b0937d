// Internal: the gateway's asynchronous door to the key store. An io thread never blocks on the
// store: it submits one operation and gets the result posted back to its own executor.
//
// One operation is one lease-mode store call with its single-call meaning (claim, heartbeat,
// complete, fail_final, release, get), so an implementation may group many callers' operations
// into one transaction and one durable commit, provided each result is reported only once its
// operation is durable.
//
// Thread-safety: Submit may be called from any thread at once.
#ifndef IDEM_GATEWAY_KEY_SERVICE_H_
#define IDEM_GATEWAY_KEY_SERVICE_H_

#include <cstdint>
#include <functional>
#include <memory>

// GCC 12 at -O2 reports false "potential null pointer dereference" warnings inside Asio.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/any_io_executor.hpp>
#pragma GCC diagnostic pop

#include "absl/status/status.h"
#include "idem/clock.h"
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
};

struct KeyOpResult {
  // The store call's status (Store's meanings: Aborted when the fence moved, Unavailable when the
  // store is busy or down, NotFound for a kGet of an absent key).
  absl::Status status;
  // kClaim: true when this caller holds the key now (a new claim or a takeover of a lapsed
  // lease); record is then its in_progress record, else the live record that blocked it.
  bool claimed = false;
  bool taken_over = false;
  KeyRecord record;    // kClaim, kGet
  int64_t now_ms = 0;  // the service clock's time when the operation ran
};

class KeyService {
 public:
  using Done = std::function<void(KeyOpResult)>;

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

// Returns a service running operations on `threads` threads, each calling the blocking store.
// REQUIRES: `store` and `clock` outlive the service; threads >= 1.
std::unique_ptr<KeyService> NewThreadPoolKeyService(Store& store, const Clock& clock, int threads);

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_KEY_SERVICE_H_
