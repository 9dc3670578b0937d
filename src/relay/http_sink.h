// The webhook sink of `idem relay --sink http`: a POST per message to one URL, signed per the
// Standard Webhooks specification (idem/webhook_signature.h), the message id as webhook-id and
// Idempotency-Key, the payload as the application/json body, the message's own headers added.
//   2xx                      delivered
//   410                      gone: the endpoint asks for no more deliveries
//   anything else, a timeout, a refused or broken connection, an answer that is not HTTP:
//                            retried (Retry-After honoured on 429 and 503)
//
// Thread-safety: one HttpSink per thread.
#ifndef IDEM_RELAY_HTTP_SINK_H_
#define IDEM_RELAY_HTTP_SINK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "http/blocking_client.h"
#include "http/url.h"
#include "idem/clock.h"
#include "relay/sink.h"

namespace idem::relay {

struct HttpSinkOptions {
  std::string url;               // http:// or https://
  std::string secret;            // "whsec_<base64>"
  Millis timeout{10'000};        // per POST, connecting included. Default 10 s.
  const Clock* clock = nullptr;  // webhook-timestamp and Retry-After dates; default SystemClock()
};

class HttpSink final : public Sink {
 public:
  // Errors: InvalidArgument for a malformed URL or secret (the message never shows the secret).
  static absl::StatusOr<std::unique_ptr<HttpSink>> Create(const HttpSinkOptions& options);

  Delivery Publish(const OutboxRecord& message) override;

 private:
  HttpSink(http::Url url, std::string key, std::unique_ptr<http::BlockingClient> client,
           const HttpSinkOptions& options)
      : url_(std::move(url)), key_(std::move(key)), client_(std::move(client)), options_(options) {}

  http::Url url_;
  std::string key_;
  std::unique_ptr<http::BlockingClient> client_;
  HttpSinkOptions options_;
};

}  // namespace idem::relay

#endif  // IDEM_RELAY_HTTP_SINK_H_
