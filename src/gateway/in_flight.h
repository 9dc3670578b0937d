// Internal: what a gateway process has in flight: the requests, so SIGTERM can wait for them
// within a bound; the keys held, for the gateway-wide heartbeat (LeaseTicker), with the time each
// lease is known to run to, by this host's steady clock (a store's lease end and time converted
// to it, so hosts' wall clocks never enter), and what each is doing: its upstream call runs, its
// outcome is being written, or its outcome (or release) waits to be recorded while the write is
// retried (the key stays held and heartbeated meanwhile).
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

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#pragma GCC diagnostic pop

#include "idem/record.h"

namespace idem::gateway {

class InFlight final {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  enum class Phase {
    kRunning,  // its upstream call runs: heartbeats renew it
    kWriting,  // its outcome or release is being written: heartbeats pause
    kPending,  // the store did not take its outcome or release at once: the write is retried
               // and heartbeats go on
  };

  struct HeldKey {
    uint64_t ticket = 0;
    Scope scope;
    int64_t fence = 0;
    SteadyTime lease_end;
    Phase phase = Phase::kRunning;
    bool releasing = false;  // what is written is a release, not an outcome
    bool lost = false;       // the store said the fence moved: someone else holds the key
    // Where the upstream call runs, and the signal that cancels it (emit only on `executor`,
    // and only while the ticket is kRunning: the signal lives in the call's frame).
    boost::asio::any_io_executor executor;
    boost::asio::cancellation_signal* cancel = nullptr;
  };

  // A request began / ended (every request, guarded or not).
  void BeginRequest();
  void EndRequest();

  // This process now holds `scope` with `fence`, its lease known to run to `lease_end`, and is
  // about to forward it (its call cancelled through `cancel` on `executor`); returns a ticket for
  // the calls below.
  uint64_t HoldKey(const Scope& scope, int64_t fence, SteadyTime lease_end,
                   boost::asio::any_io_executor executor = {},
                   boost::asio::cancellation_signal* cancel = nullptr);
  // A heartbeat extended the lease to `lease_end`. Ignored for a ticket no longer held, or an end
  // earlier than the one known (heartbeats may complete out of order).
  void RenewKey(uint64_t ticket, SteadyTime lease_end);
  // The end known for the ticket's lease; nullopt once forgotten.
  std::optional<SteadyTime> LeaseEnd(uint64_t ticket) const;
  // The key's outcome (or, when `releasing`, its release) is being written: it needs no more
  // heartbeats. One already submitted may still reach the store after the outcome and fail
  // there; that is expected.
  void StopRenewing(uint64_t ticket, bool releasing = false);
  // The store did not take the key's outcome (or, when `releasing`, its release) at once: the
  // write is retried and the key heartbeated until the write settles.
  void KeepPending(uint64_t ticket, bool releasing);
  // Whether the ticket's key is held and heartbeated (running or pending).
  bool Renewing(uint64_t ticket) const;
  // Whether the ticket's upstream call still runs.
  bool Running(uint64_t ticket) const;
  // The store said the ticket's fence moved. Returns the key as it was when its upstream call
  // still runs (the caller cancels it on its executor), else nullopt.
  std::optional<HeldKey> MarkLost(uint64_t ticket);
  bool Lost(uint64_t ticket) const;
  // The key's outcome is recorded, it was released, or it was lost.
  void ForgetKey(uint64_t ticket);

  // Waits until no request is in flight and no key is held (outcomes pending included), or
  // `bound` has passed; returns true when none is left.
  bool WaitIdle(std::chrono::milliseconds bound);

  // The keys still held, finishing and pending ones included.
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
