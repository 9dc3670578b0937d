// Where the relay publishes messages, answered with what became of each. Sinks: HTTP webhooks
// (http_sink.h, one message at a time) and NATS JetStream (nats_sink.h, many in flight at once).
//
// Thread-safety: a Sink is used by one relay thread.
#ifndef IDEM_RELAY_SINK_H_
#define IDEM_RELAY_SINK_H_

#include <optional>
#include <span>
#include <string>
#include <vector>

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

  // Publishes `messages` (of distinct aggregates, so they may overlap) and returns what became of
  // each, in the same order. Never throws. Default: Publish one after another.
  virtual std::vector<Delivery> PublishEach(std::span<const OutboxRecord* const> messages) {
    std::vector<Delivery> deliveries;
    deliveries.reserve(messages.size());
    for (const OutboxRecord* message : messages) deliveries.push_back(Publish(*message));
    return deliveries;
  }

  // true when PublishEach overlaps its messages: the relay then hands it waves (the first
  // unsent message of every aggregate in the batch, then the next, ...), each within the send
  // timeout. false: the relay publishes one message at a time.
  virtual bool concurrent() const { return false; }
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_SINK_H_
