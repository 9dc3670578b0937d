#include "check/scenario_support.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <thread>

#include "idem/fingerprint.h"
#include "idem/retry/retry_after.h"
#include "idem/version.h"

namespace idem::check::detail {
namespace {

namespace bhttp = boost::beast::http;

bool HasReplay(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("replay") != std::string::npos;
}

}  // namespace

std::string QuoteKey(std::string_view key) {
  std::string out = "\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

http::Request BuildRequest(const Plan& plan, const std::optional<std::string>& key_value,
                           const std::optional<std::string>& body) {
  const Target& t = plan.target;
  http::Request req;
  req.method_string(t.method);
  req.target(t.parsed.target);
  req.version(11);
  req.set(bhttp::field::host, t.parsed.authority);
  req.set(bhttp::field::user_agent, "idem/" IDEM_VERSION);
  for (const auto& [name, value] : t.headers) req.insert(name, value);
  if (key_value.has_value()) req.set(plan.key_header, *key_value);
  if (body.has_value() || t.has_body) {
    req.body() = body.value_or(t.body);
    req.prepare_payload();
  }
  return req;
}

Exchange ExchangeOf(std::string label, std::string key_value, const Answer& a) {
  Exchange e{.label = std::move(label),
             .key = std::move(key_value),
             .status = a.status,
             .elapsed_ms = a.took.count(),
             .error = a.error};
  if (a.status != 0) {
    e.body_sha256 = Sha256Hex(a.body);
    e.retry_after = a.Header("Retry-After");
    e.replayed = ReplayMarker(a);
  }
  return e;
}

Answer SendOne(Context& ctx, ScenarioResult& r, std::string label, const std::string& key_value,
               http::Request request) {
  Answer a = ctx.prober.Send(ctx.plan.target.parsed, std::move(request));
  r.exchanges.push_back(ExchangeOf(std::move(label), key_value, a));
  return a;
}

Millis ConflictWait(const Context& ctx, const Answer& a, int resend) {
  // The first re-send comes after ctx.conflict_wait at most, later ones after twice as long as
  // the one before, never longer than the server's Retry-After nor ctx.max_conflict_wait: a
  // gateway's Retry-After is often its whole lease, while the first request ends much sooner.
  Millis wait = ctx.conflict_wait * (int64_t{1} << std::clamp(resend - 1, 0, 16));
  const std::string header = a.Header("Retry-After");
  if (!header.empty()) {
    absl::StatusOr<Millis> after = retry::ParseRetryAfter(header, SystemClock().NowMillis());
    if (after.ok()) wait = std::min(wait, *after);
  }
  return std::clamp(wait, ctx.min_conflict_wait, ctx.max_conflict_wait);
}

Answer SendSettled(Context& ctx, ScenarioResult& r, const std::string& label,
                   const std::string& key_value, const std::function<http::Request()>& make,
                   int& conflicts) {
  Answer a = SendOne(ctx, r, label, key_value, make());
  for (int retry = 1; a.status == 409 && retry <= ctx.max_conflict_retries; ++retry) {
    ++conflicts;
    std::this_thread::sleep_for(ConflictWait(ctx, a, retry));
    a = SendOne(ctx, r, fmt::format("{}, again after 409", label), key_value, make());
  }
  if (a.status == 409) ++conflicts;
  return a;
}

std::string Digest(const Answer& a) { return "sha256:" + Sha256Hex(a.body).substr(0, 12); }

std::string Short(const Answer& a) {
  if (a.status == 0) return fmt::format("no answer ({})", a.error);
  return fmt::format("{} {} {}ms", a.status, Digest(a), a.took.count());
}

std::string Excerpt(const std::string& body) {
  if (body.empty()) return "an empty body";
  constexpr size_t kMax = 80;
  std::string out = "'";
  for (size_t i = 0; i < body.size() && i < kMax; ++i) {
    const unsigned char c = static_cast<unsigned char>(body[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '.');
  }
  out += body.size() > kMax ? "...'" : "'";
  return out;
}

bool SameAnswer(const Answer& a, const Answer& b) {
  return a.status != 0 && a.status == b.status && a.body == b.body;
}

std::string ReplayMarker(const Answer& a) {
  for (const auto& [name, value] : a.headers) {
    if (HasReplay(name)) return fmt::format("{}: {}", name, value);
  }
  return "";
}

bool StopOnFirst(const Answer& first, std::string_view what, ScenarioResult& r) {
  if (first.status == 0) {
    Fail(r, fmt::format("{} got no answer: {}", what, first.error));
    return true;
  }
  if (first.status >= 500) {
    Fail(r, fmt::format("{} was answered {}: the API failed it, so nothing could be compared", what,
                        first.status));
    return true;
  }
  if (first.status == 409) {
    Fail(r, fmt::format("{} was answered 409 (in flight) and still was after every retry", what));
    return true;
  }
  if (first.status >= 400) {
    r.verdict = Verdict::kNotApplicable;
    r.why = fmt::format(
        "the API refused the request itself ({}); give one it accepts "
        "(-X, -d, -H)",
        first.status);
    return true;
  }
  return false;
}

void Fail(ScenarioResult& r, const std::string& why) {
  if (r.verdict == Verdict::kFail) return;
  r.verdict = Verdict::kFail;
  r.why = why;
}

}  // namespace idem::check::detail
