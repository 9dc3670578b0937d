// The JetStream sink of `idem relay --sink nats`: each message is published to the subject
// "<prefix>.<topic>" with its id as Nats-Msg-Id (so the stream's duplicate window drops a
// redelivery), its headers as NATS headers and its payload as the data. A message counts as sent
// only once JetStream acknowledged it (an acknowledgement that reports a duplicate counts too).
//
// Publishing is asynchronous: PublishEach sends a whole wave of messages (the relay gives it at
// most one message per aggregate, so order per aggregate holds) with at most `max_pending`
// acknowledgements outstanding, then waits for them, up to `timeout` for the wave.
//   acknowledged (or duplicate)           delivered
//   no acknowledgement in time, an error
//   from JetStream, not connected          retried
//   a topic or header NATS cannot carry     rejected (dead at once)
//   over the server's max_payload           retried with that reason (dead after its attempts)
//
// Thread-safety: one NatsSink per relay thread; acknowledgements arrive on libnats's threads.
#ifndef IDEM_RELAY_NATS_SINK_H_
#define IDEM_RELAY_NATS_SINK_H_

#include <nats/nats.h>

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "idem/clock.h"
#include "relay/sink.h"

namespace idem::relay {

struct NatsSinkOptions {
  std::string url;             // nats://host:port, or nats://host:port,host:port,... (servers)
  std::string subject_prefix;  // messages go to <subject_prefix>.<topic>
  Millis timeout{10'000};      // a wave's acknowledgements, all of them. Default 10 s.
  int max_pending = 256;       // acknowledgements outstanding at once. Default 256.
};

// The servers of a --url, one libnats URL each: "nats://[USER:PASSWORD@]HOST:PORT" alone or in a
// comma-separated list, "nats://HOST:PORT,HOST:PORT" (as the key store's URI lists them; each may
// also repeat "nats://"; the credentials go on each). Errors: InvalidArgument, saying the form.
absl::StatusOr<std::vector<std::string>> NatsServers(const std::string& url);

class NatsSink final : public Sink {
 public:
  // Starts connecting (in the background: a server that is down makes attempts fail and be
  // retried, as with HTTP). Errors: InvalidArgument for a URL NatsServers refuses, a
  // prefix that is not a subject without wildcards, or max_pending < 1.
  static absl::StatusOr<std::unique_ptr<NatsSink>> Create(const NatsSinkOptions& options);
  ~NatsSink() override;
  NatsSink(const NatsSink&) = delete;
  NatsSink& operator=(const NatsSink&) = delete;

  Delivery Publish(const OutboxRecord& message) override;
  std::vector<Delivery> PublishEach(std::span<const OutboxRecord* const> messages) override;
  bool concurrent() const override { return true; }

 private:
  explicit NatsSink(NatsSinkOptions options) : options_(std::move(options)) {}
  absl::Status Connect(const std::vector<std::string>& servers);
  // Builds the NATS message of `message`; null, with `failed` saying why, when it cannot be sent.
  natsMsg* Build(const OutboxRecord& message, Delivery& failed);
  static void OnAck(jsCtx* js, natsMsg* msg, jsPubAck* ack, jsPubAckErr* err, void* closure);
  void Settle(size_t index, Delivery delivery);  // REQUIRES: mu_ held

  NatsSinkOptions options_;
  natsOptions* nats_options_ = nullptr;
  natsConnection* conn_ = nullptr;
  jsCtx* js_ = nullptr;
  std::mutex mu_;
  std::unordered_map<std::string, size_t> waiting_;  // message id → index; guarded by mu_
  std::vector<Delivery> results_;                    // guarded by mu_
  std::vector<bool> settled_;                        // guarded by mu_
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_NATS_SINK_H_
