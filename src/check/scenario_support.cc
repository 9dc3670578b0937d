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

std::string KeyValue(const Plan& plan, std::string_view key) {
  switch (plan.key_format) {
    case KeyFormat::kSfString:
      return QuoteKey(key);
    case KeyFormat::kSfToken:
      // An sf-token starts with a letter; a UUID may start with a digit.
      return "k" + std::string(key);
    case KeyFormat::kRaw:
      return std::string(key);
  }
  return QuoteKey(key);
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

void NoteAnswer(Context& ctx, const Answer& a) {
  if (a.status != 0) ctx.answered = true;
}

Answer SendOne(Context& ctx, ScenarioResult& r, std::string label, const std::string& key_value,
               http::Request request) {
  Answer a = ctx.prober.Send(ctx.plan.target.parsed, std::move(request));
  NoteAnswer(ctx, a);
  r.exchanges.push_back(ExchangeOf(std::move(label), key_value, a));
  return a;
}

Millis ConflictWait(const Context& ctx, const Answer& a, int resend) {
  return ConflictWait(ctx, a, resend, ctx.conflict_wait);
}

Millis ConflictWait(const Context& ctx, const Answer& a, int resend, Millis first) {
  // The first re-send comes after `first` at most, later ones after twice as long as the one
  // before, never longer than the server's Retry-After nor ctx.max_conflict_wait: a gateway's
  // Retry-After is often its whole lease, while the first request ends much sooner.
  Millis wait = first * (int64_t{1} << std::clamp(resend - 1, 0, 16));
  const std::string header = a.Header("Retry-After");
  if (!header.empty()) {
    absl::StatusOr<Millis> after = retry::ParseRetryAfter(header, SystemClock().NowMillis());
    if (after.ok()) wait = std::min(wait, *after);
  }
  return std::clamp(wait, ctx.min_conflict_wait, ctx.max_conflict_wait);
}

Answer SendSettled(Context& ctx, ScenarioResult& r, const std::string& label,
                   const std::string& key_value, const std::function<http::Request()>& make,
                   Tries& tries) {
  Answer a = SendOne(ctx, r, label, key_value, make());
  int conflict_resends = 0, error_resends = 0;
  while (!ctx.DeadlinePassed()) {
    if (a.status == 409 && conflict_resends < ctx.max_conflict_retries) {
      ++tries.conflicts;
      ctx.Wait(ConflictWait(ctx, a, ++conflict_resends));
    } else if (a.status >= 500 && error_resends < ctx.server_error_resends) {
      ++tries.server_errors;
      if (const std::string marker = ReplayMarker(a);
          !marker.empty() && tries.replayed_server_error.empty()) {
        tries.replayed_server_error = fmt::format("{} with {}", a.status, marker);
      }
      ctx.Wait(ctx.server_error_wait * (int64_t{1} << error_resends++));
    } else {
      break;
    }
    if (ctx.DeadlinePassed()) break;
    a = SendOne(ctx, r, fmt::format("{}, again after {}", label, a.status), key_value, make());
  }
  if (a.status == 409) ++tries.conflicts;
  if (a.status >= 500) {
    ++tries.server_errors;
    if (const std::string marker = ReplayMarker(a);
        !marker.empty() && tries.replayed_server_error.empty()) {
      tries.replayed_server_error = fmt::format("{} with {}", a.status, marker);
    }
  }
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

namespace {

// A 5xx to every re-send under one key: was it kept for the key? A fresh key sent once tells.
bool StopOnServerError(Context& ctx, const Answer& first, const Tries& tries,
                       std::string_view what, ScenarioResult& r) {
  const int sent = tries.server_errors;
  if (!tries.replayed_server_error.empty()) {
    Fail(r,
         fmt::format("{} was answered {} and, sent again with its key, {}: a transient failure "
                     "was kept as the key's answer (a retry can never succeed)",
                     what, first.status, tries.replayed_server_error),
         reason::kServerErrorCached);
    return true;
  }
  const std::string fresh = ctx.new_key();
  r.keys.push_back(fresh);
  const std::string kv = KeyValue(ctx.plan, fresh);
  const Answer other = SendOne(ctx, r, "a fresh key, to compare", kv, BuildRequest(ctx.plan, kv));
  if (other.status / 100 == 2) {
    ++r.expected_effects;
    Fail(r,
         fmt::format("{} was answered {} {} times, sent with its key each time, while a fresh "
                     "key was answered {} at once: the failure was kept for the key",
                     what, first.status, sent, other.status),
         reason::kServerErrorCached);
    return true;
  }
  r.verdict = Verdict::kNotApplicable;
  r.reason = reason::kServerError;
  r.why = fmt::format(
      "{} was answered {} {} times (sent again with its key) and a fresh key {}: the API fails "
      "the request, so nothing could be checked",
      what, first.status, sent, other.status == 0 ? "no answer" : std::to_string(other.status));
  return true;
}

}  // namespace

bool StopOnFirst(Context& ctx, const Answer& first, std::string_view what, ScenarioResult& r) {
  return StopOnFirst(ctx, first, Tries{}, what, r);
}

bool StopOnFirst(Context& ctx, const Answer& first, const Tries& tries, std::string_view what,
                 ScenarioResult& r) {
  if (first.status == 0) {
    if (!ctx.answered) {
      ctx.never_answered = true;
      ctx.never_answered_why = first.error;
      ctx.never_answered_code = first.code;
      r.verdict = Verdict::kNotApplicable;
      r.reason = reason::kNoAnswer;
      r.why = fmt::format("{} got no answer, and the URL never answered: {}", what, first.error);
      return true;
    }
    Fail(r, fmt::format("{} got no answer: {}", what, first.error), reason::kNoAnswer);
    return true;
  }
  if (first.status >= 500) return StopOnServerError(ctx, first, tries, what, r);
  if (first.status == 409) {
    Fail(r, fmt::format("{} was answered 409 (in flight) and still was after every retry", what),
         reason::kStillInFlight);
    return true;
  }
  if (first.status >= 300) {
    r.verdict = Verdict::kNotApplicable;
    if (first.status < 400) {
      const std::string location = first.Header("Location");
      r.reason = reason::kRedirect;
      r.why = fmt::format("{} was answered {} (a redirect{}): check the URL it names instead",
                          what, first.status,
                          location.empty() ? ", without Location" : " to " + location);
    } else if (first.status == 401 || first.status == 403) {
      r.reason = reason::kCredentialsMissing;
      r.why = fmt::format(
          "{} was answered {}: credentials are missing or refused; give them with -H (e.g. "
          "-H 'Authorization: Bearer ...')",
          what, first.status);
    } else {
      r.reason = reason::kRequestRefused;
      r.why = fmt::format(
          "the API refused the request itself ({}); give one it accepts (-X, -d, -H; "
          "--key-format if it refuses the key's form)",
          first.status);
    }
    return true;
  }
  return false;
}

void Agreed(const Context& ctx, ScenarioResult& r, const std::string& why,
            const std::string& marker) {
  r.why = why;
  if (!marker.empty()) {
    r.verdict = Verdict::kPass;
    r.reason = reason::kReplayMarker;
    return;
  }
  if (ctx.plan.count.has_value()) {
    r.verdict = Verdict::kPass;  // until the count says otherwise
    r.reason = reason::kOneEffectPerKey;
    r.needs_count = true;
    return;
  }
  r.verdict = Verdict::kInconclusive;
  r.reason = reason::kNoEvidence;
  r.why += fmt::format(", but no replay marker was seen and effects were not counted: {}",
                       kHowToConclude);
}

void Fail(ScenarioResult& r, const std::string& why, std::string_view code) {
  if (r.verdict == Verdict::kFail) return;
  r.verdict = Verdict::kFail;
  r.why = why;
  r.reason = std::string(code);
}

}  // namespace idem::check::detail
