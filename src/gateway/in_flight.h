// Internal: what a gateway process has in flight, so SIGTERM can wait for it within a bound and
// then release the keys still held (their upstream calls did not finish in time).
//
// Thread-safety: every member may be called from any thread at once.
#ifndef IDEM_GATEWAY_IN_FLIGHT_H_
#define IDEM_GATEWAY_IN_FLIGHT_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "idem/record.h"

namespace idem::gateway {

class InFlight final {
 public:
  struct HeldKey {
    Scope scope;
    int64_t fence = 0;
  };

  // A request began / ended (every request, guarded or not).
  void BeginRequest();
  void EndRequest();

  // This process now holds `scope` with `fence`; returns a ticket for ForgetKey.
  uint64_t HoldKey(const Scope& scope, int64_t fence);
  // The key's outcome is recorded or it was released.
  void ForgetKey(uint64_t ticket);

  // Waits until no request is in flight or `bound` has passed; returns true when none is left.
  bool WaitIdle(std::chrono::milliseconds bound);

  // The keys still held.
  std::vector<HeldKey> HeldKeys() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable idle_;
  int64_t requests_ = 0;
  uint64_t next_ticket_ = 1;
  std::map<uint64_t, HeldKey> keys_;
};

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_IN_FLIGHT_H_
