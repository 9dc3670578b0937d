// Where the relay publishes messages: one Publish call per message, answered with what became of
// it. Sinks: HTTP webhooks (http_sink.h); NATS JetStream later.
//
// Thread-safety: a Sink is used by one relay thread.
#ifndef IDEM_RELAY_SINK_H_
#define IDEM_RELAY_SINK_H_

#include <optional>
#include <string>

#include "idem/clock.h"
#include "idem/outbox_admin.h"

namespace idem::relay {

struct Delivery {
  enum class Kind {
    kDelivered,  // acknowledged: the message is sent
    kRetry,      // failed for now: try again later (backoff, or retry_after)
    kRejected,   // can never succeed as it is (e.g. over the sink's size limit): dead at once
    kGone,       // the endpoint is gone for good (HTTP 410): stop delivering to it
  };
  Kind kind = Kind::kDelivered;
  std::string error;                  // why, for a person (never the secret)
  std::optional<Millis> retry_after;  // kRetry: the endpoint's Retry-After, when it gave one
};

class Sink {
 public:
  virtual ~Sink() = default;
  // Publishes `message` once. Never throws.
  virtual Delivery Publish(const OutboxRecord& message) = 0;
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_SINK_H_
