#include "relay/http_sink.h"

#include <fmt/format.h>

#include "idem/retry/retry_after.h"
#include "idem/version.h"
#include "idem/webhook_signature.h"

namespace idem::relay {
namespace {

namespace bhttp = boost::beast::http;

// The first line of a response body, cut short, for last_error.
std::string Excerpt(const std::string& body) {
  std::string line = body.substr(0, body.find('\n'));
  if (line.size() > 120) line = line.substr(0, 117) + "...";
  return line;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpSink>> HttpSink::Create(const HttpSinkOptions& options) {
  absl::StatusOr<http::Url> url = http::ParseUrl(options.url);
  if (!url.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--url: {}", std::string(url.status().message())));
  }
  absl::StatusOr<std::string> key = DecodeWebhookSecret(options.secret);
  if (!key.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("--secret: {}", std::string(key.status().message())));
  }
  absl::StatusOr<std::unique_ptr<http::BlockingClient>> client = http::BlockingClient::Create({});
  if (!client.ok()) return client.status();
  return std::unique_ptr<HttpSink>(
      new HttpSink(std::move(*url), std::move(*key), std::move(*client), options));
}

Delivery HttpSink::Publish(const OutboxRecord& message) {
  const Clock& clock = options_.clock != nullptr ? *options_.clock : SystemClock();
  const int64_t now_ms = clock.NowMillis();
  const int64_t timestamp = now_ms / 1000;
  http::Request req{bhttp::verb::post, url_.target, 11};
  req.set(bhttp::field::host, url_.authority);
  req.set(bhttp::field::user_agent, "idem-relay/" IDEM_VERSION);
  for (const Header& header : message.headers) req.set(header.name, header.value);
  req.set(bhttp::field::content_type, "application/json");
  req.set("webhook-id", message.id);
  req.set("webhook-timestamp", std::to_string(timestamp));
  req.set("webhook-signature", SignWebhook(key_, message.id, timestamp, message.payload));
  req.set("Idempotency-Key", message.id);
  req.body() = message.payload;
  req.prepare_payload();
  http::SendOptions send{.deadline = std::chrono::steady_clock::now() + options_.timeout};
  send.limits.max_body = 64 * 1024;  // an acknowledgement is small; more is read as garbage
  // The relay owns the message id (its key) and delivers at least once, the receiver deduplicates.
  send.resend = http::Resend::kIdempotentOrKeyed;
  http::SendResult sent = client_->Send(url_, std::move(req), send);
  if (!sent.response.ok()) {
    return {.kind = Delivery::Kind::kRetry, .error = std::string(sent.response.status().message())};
  }
  const http::Response& res = *sent.response;
  const int status = res.result_int();
  if (status / 100 == 2) return {.kind = Delivery::Kind::kDelivered};
  Delivery failed{.kind = Delivery::Kind::kRetry,
                  .error = fmt::format("HTTP {} from {}: {}", status, url_.origin.ToString(),
                                       Excerpt(res.body()))};
  if (status == 410) {
    failed.kind = Delivery::Kind::kGone;
    return failed;
  }
  if (auto it = res.find(bhttp::field::retry_after); it != res.end()) {
    absl::StatusOr<Millis> wait = retry::ParseRetryAfter(std::string_view(it->value()), now_ms);
    if (wait.ok()) failed.retry_after = *wait;
  }
  return failed;
}

}  // namespace idem::relay
