#include "cli/call_attempt.h"

#include <chrono>

#include "absl/status/status.h"
#include "idem/retry/retry_after.h"
#include "idem/version.h"

namespace idem::cli {
namespace {

namespace bhttp = boost::beast::http;
using Kind = retry::AttemptResult::Kind;

http::Request BuildRequest(const CallRequest& call, const HeaderList& extra) {
  http::Request req;
  req.method_string(call.method);
  req.target(call.url.target);
  req.version(11);
  req.set(bhttp::field::host, call.url.authority);
  req.set(bhttp::field::user_agent, "idem/" IDEM_VERSION);
  for (const auto& [name, value] : call.headers) req.set(name, value);
  for (const auto& [name, value] : extra) req.set(name, value);
  if (call.has_body) {
    req.body() = call.body;
    req.prepare_payload();
  }
  return req;
}

// How the retry policy sees a failed exchange: a failure no retry changes (no such host, a TLS
// certificate refused, an answer too large or not HTTP), the time ran out, nothing reached the
// server, or the connection broke after the request went out.
Kind KindOf(const http::SendResult& sent) {
  const absl::Status& s = sent.response.status();
  if (absl::IsNotFound(s) || absl::IsUnauthenticated(s) || absl::IsResourceExhausted(s) ||
      absl::IsDataLoss(s)) {
    return Kind::kPermanent;
  }
  if (absl::IsDeadlineExceeded(s)) return Kind::kTimedOut;
  if (!sent.request_sent) return Kind::kConnectFailed;
  return Kind::kBroken;
}

retry::AttemptResult ReadAnswer(const http::Response& res) {
  retry::AttemptResult r;
  r.kind = Kind::kResponse;
  r.status = static_cast<int>(res.result_int());
  if (auto it = res.find(retry::kRetryControlHeader); it != res.end()) {
    r.do_not_retry = retry::IsDoNotRetry(it->value());
  }
  if (auto it = res.find(bhttp::field::retry_after); it != res.end()) {
    absl::StatusOr<Millis> after =
        retry::ParseRetryAfter(std::string(it->value()), SystemClock().NowMillis());
    if (after.ok()) r.retry_after = *after;  // an unreadable Retry-After is ignored
  }
  return r;
}

}  // namespace

AttemptOutcome SendAttempt(http::BlockingClient& client, const CallRequest& request,
                           const HeaderList& extra, Millis timeout, const http::Limits& limits) {
  http::SendOptions options;
  options.limits = limits;
  // idem call owns the key and sends it again on every attempt anyway (docs/idem-call.md).
  options.resend = http::Resend::kIdempotentOrKeyed;
  if (timeout.count() > 0) options.deadline = std::chrono::steady_clock::now() + timeout;
  http::SendResult sent = client.Send(request.url, BuildRequest(request, extra), options);
  AttemptOutcome out;
  if (!sent.response.ok()) {
    out.result.kind = KindOf(sent);
    out.error = std::string(sent.response.status().message());
    return out;
  }
  out.result = ReadAnswer(*sent.response);
  out.response = std::move(*sent.response);
  return out;
}

}  // namespace idem::cli
