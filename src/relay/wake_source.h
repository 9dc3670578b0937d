// What the relay waits on between passes that found nothing to send: a timed wait that ends early
// when messages may have arrived (PostgreSQL's NOTIFY, pg_notify_wake.h) or when the relay is
// asked to stop.
//
// Thread-safety: Wait on the relay's thread; Interrupt from any thread.
#ifndef IDEM_RELAY_WAKE_SOURCE_H_
#define IDEM_RELAY_WAKE_SOURCE_H_

#include "idem/clock.h"

namespace idem::relay {

class WakeSource {
 public:
  virtual ~WakeSource() = default;
  // Returns after `wait` at the latest; earlier when new messages may be due, or Interrupt was
  // called since the last Wait returned. Level-triggered: a wake (a commit's notification, an
  // Interrupt) that came while no Wait ran, say during the relay's pass, ends the next Wait at
  // once; it is never lost by arriving between two Waits. Never throws.
  virtual void Wait(Millis wait) = 0;
  // Ends the current or next Wait at once.
  virtual void Interrupt() = 0;
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_WAKE_SOURCE_H_
