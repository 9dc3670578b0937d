// Internal: what a gateway process has in flight: the requests, so SIGTERM can wait for them
// within a bound and then release the keys still held (their upstream calls did not finish in
// time); the keys held, for the gateway-wide heartbeat (LeaseTicker), with the time each lease is
// known to run to, by this host's steady clock (a store's lease end and time converted to it, so
// hosts' wall clocks never enter).
//
// Thread-safety: every member may be called from any thread at once.
#ifndef IDEM_GATEWAY_IN_FLIGHT_H_
#define IDEM_GATEWAY_IN_FLIGHT_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "idem/record.h"

namespace idem::gateway {

class InFlight final {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  struct HeldKey {
    uint64_t ticket = 0;
    Scope scope;
    int64_t fence = 0;
    SteadyTime lease_end;
    bool finishing = false;  // its outcome or release is being written: heartbeats stop
  };

  // A request began / ended (every request, guarded or not).
  void BeginRequest();
  void EndRequest();

  // This process now holds `scope` with `fence`, its lease known to run to `lease_end`; returns a
  // ticket for the calls below.
  uint64_t HoldKey(const Scope& scope, int64_t fence, SteadyTime lease_end);
  // A heartbeat extended the lease to `lease_end`. Ignored for a ticket no longer held, or an end
  // earlier than the one known (heartbeats may complete out of order).
  void RenewKey(uint64_t ticket, SteadyTime lease_end);
  // The end known for the ticket's lease; nullopt once forgotten.
  std::optional<SteadyTime> LeaseEnd(uint64_t ticket) const;
  // The key's outcome (or release) is being written: it needs no more heartbeats. One already
  // submitted may still reach the store after the outcome and fail there; that is expected.
  void StopRenewing(uint64_t ticket);
  // Whether the ticket's key is held and still renewed (not forgotten, not finishing).
  bool Renewing(uint64_t ticket) const;
  // The key's outcome is recorded or it was released.
  void ForgetKey(uint64_t ticket);

  // Waits until no request is in flight or `bound` has passed; returns true when none is left.
  bool WaitIdle(std::chrono::milliseconds bound);

  // The keys still held, finishing ones included.
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
