// The scenarios that resend one request under one key: replay, mismatch, lost-answer,
// retention. A pass needs evidence that the request ran once: a replay marker where a replay
// was expected, or one counted effect (detail::Agreed).
#include <fmt/format.h>

#include "check/body_variant.h"
#include "check/scenario.h"
#include "check/scenario_support.h"
#include "idem/retry/duration.h"

namespace idem::check {
namespace {

using detail::Fail;
using detail::Short;
using detail::Tries;

// Why `later` is not `first`'s answer, naming both (their bodies tell a person which effect
// each one reports, e.g. two different charge ids).
std::string Difference(const Answer& first, const Answer& later) {
  if (later.status == 0) return fmt::format("got no answer ({})", later.error);
  if (later.status != first.status) {
    return fmt::format("was answered {}, not {}: {}", later.status, first.status,
                       detail::Excerpt(later.body));
  }
  return fmt::format("has another body ({} against {}): {} against {}", detail::Digest(later),
                     detail::Digest(first), detail::Excerpt(later.body),
                     detail::Excerpt(first.body));
}

// " (after 2x 409)", " (after 1x 500)": what came before the answer, for the evidence line.
std::string Before(const Tries& tries) {
  std::string out;
  if (tries.conflicts > 0) out += fmt::format("{}x 409", tries.conflicts);
  if (tries.server_errors > 0) {
    out += fmt::format("{}{}x 5xx", out.empty() ? "" : ", ", tries.server_errors);
  }
  return out.empty() ? "" : " (after " + out + ")";
}

std::string WithMarker(const std::string& marker) {
  return marker.empty() ? "" : ", " + marker;
}

// A fresh key's first answer, settled; false (r set) when it leaves nothing to check.
bool First(Context& ctx, ScenarioResult& r, const std::string& kv, Answer& first) {
  Tries tries;
  first = detail::SendSettled(
      ctx, r, "first", kv, [&] { return detail::BuildRequest(ctx.plan, kv); }, tries);
  r.evidence = "first " + Short(first) + Before(tries);
  return !detail::StopOnFirst(ctx, first, tries, "the first request with a fresh key", r);
}

}  // namespace

ScenarioResult Replay(Context& ctx) {
  ScenarioResult r{.name = "replay"};
  r.expected_effects = 1;
  r.keys = {ctx.new_key()};
  const std::string kv = detail::KeyValue(ctx.plan, r.keys[0]);
  auto make = [&] { return detail::BuildRequest(ctx.plan, kv); };
  Answer first;
  if (!First(ctx, r, kv, first)) return r;
  Tries tries;
  const Answer second = detail::SendSettled(ctx, r, "replay", kv, make, tries);
  const std::string marker = detail::ReplayMarker(second);
  r.evidence += "; replay " + Short(second) + Before(tries) + WithMarker(marker);
  if (!detail::SameAnswer(first, second)) {
    Fail(r, "the same key and body sent again " + Difference(first, second),
         reason::kOtherAnswer);
    return r;
  }
  detail::Agreed(ctx, r,
                 fmt::format("the same key and body sent again got the same status and body{}",
                             marker.empty() ? " (no replay marker header)" : ", with " + marker),
                 marker);
  return r;
}

ScenarioResult Mismatch(Context& ctx) {
  ScenarioResult r{.name = "mismatch"};
  r.expected_effects = 1;
  r.keys = {ctx.new_key()};
  const std::string kv = detail::KeyValue(ctx.plan, r.keys[0]);
  auto make = [&] { return detail::BuildRequest(ctx.plan, kv); };
  Answer first;
  if (!First(ctx, r, kv, first)) return r;
  const BodyVariant other = OtherBody(ctx.plan.target.has_body ? ctx.plan.target.body : "");
  // Not re-sent on a 409: the first request has been answered, so a 409 here refuses the body.
  // A 5xx is no refusal: it is sent again, as any request failed by the server.
  Answer refused =
      detail::SendOne(ctx, r, "other body", kv, detail::BuildRequest(ctx.plan, kv, other.body));
  for (int resend = 0; refused.status >= 500 && resend < ctx.server_error_resends &&
                       !ctx.DeadlinePassed();
       ++resend) {
    ctx.Wait(ctx.server_error_wait * (int64_t{1} << resend));
    refused = detail::SendOne(ctx, r, fmt::format("other body, again after {}", refused.status),
                              kv, detail::BuildRequest(ctx.plan, kv, other.body));
  }
  r.evidence += fmt::format("; other body ({}) {}", other.change, Short(refused));
  if (refused.status == 0 || refused.status / 100 != 4) {
    const std::string what = refused.status == 0 ? fmt::format("got no answer ({})", refused.error)
                             : detail::SameAnswer(first, refused)
                                 ? fmt::format("got the first answer ({})", refused.status)
                                 : fmt::format("was answered {}", refused.status);
    Fail(r,
         fmt::format("the same key with another body ({}) {}; it must be refused with a "
                     "4xx (422 per the IETF draft)",
                     other.change, what),
         refused.status == 0 ? reason::kNoAnswer : reason::kOtherBodyAccepted);
    return r;
  }
  Tries tries;
  const Answer again = detail::SendSettled(ctx, r, "again", kv, make, tries);
  const std::string marker = detail::ReplayMarker(again);
  r.evidence += "; first body again " + Short(again) + Before(tries) + WithMarker(marker);
  if (!detail::SameAnswer(first, again)) {
    Fail(r,
         "after the other body was refused, the first request sent again " +
             Difference(first, again),
         reason::kOtherAnswer);
    return r;
  }
  detail::Agreed(
      ctx, r,
      fmt::format("another body ({}) under the same key was refused with {}{}, and the "
                  "first answer was replayed unchanged after it{}",
                  other.change, refused.status,
                  refused.status == 422 ? "" : " (422 per the IETF draft)",
                  marker.empty() ? "" : " with " + marker),
      marker);
  return r;
}

ScenarioResult LostAnswer(Context& ctx) {
  ScenarioResult r{.name = "lost-answer"};
  r.expected_effects = 1;
  r.keys = {ctx.new_key()};
  const std::string kv = detail::KeyValue(ctx.plan, r.keys[0]);
  auto make = [&] { return detail::BuildRequest(ctx.plan, kv); };
  const Answer lost = ctx.prober.SendAndHangUp(ctx.plan.target.parsed, make());
  r.exchanges.push_back(detail::ExchangeOf("sent, then hung up", kv, lost));
  if (!lost.sent || !lost.error.empty()) {
    Fail(r, fmt::format("the request could not be sent: {}", lost.error), reason::kNoAnswer);
    r.evidence = "hang-up request not sent";
    return r;
  }
  r.evidence = "sent and hung up before the answer";
  ctx.Wait(ctx.lost_answer_pause);
  Tries tries;
  const Answer retry = detail::SendSettled(ctx, r, "retry", kv, make, tries);
  const std::string retry_marker = detail::ReplayMarker(retry);
  r.evidence += "; retry " + Short(retry) + Before(tries) + WithMarker(retry_marker);
  if (detail::StopOnFirst(ctx, retry, tries, "the retry after the lost answer", r)) return r;
  Tries later;
  const Answer replay = detail::SendSettled(ctx, r, "replay", kv, make, later);
  const std::string marker = detail::ReplayMarker(replay);
  r.evidence += "; replay " + Short(replay) + Before(later) + WithMarker(marker);
  if (!detail::SameAnswer(retry, replay)) {
    Fail(r,
         fmt::format("the retry after the lost answer got {}, but a later replay {}", Short(retry),
                     Difference(retry, replay)),
         reason::kOtherAnswer);
    return r;
  }
  const std::string why = fmt::format(
      "after an answer lost on a closed connection, the retry got {}{} and a later replay the "
      "same{}",
      retry.status, retry_marker.empty() ? "" : " (" + retry_marker + ": the lost request had run)",
      tries.conflicts > 0 ? fmt::format("; {} answer(s) 409 while the first ran", tries.conflicts)
                          : "");
  if (retry_marker.empty() && !marker.empty() && !ctx.plan.count.has_value()) {
    // The API marks replays, yet the retry was none: it ran the request again.
    Fail(r,
         fmt::format("the retry after the lost answer got {} without a replay marker, while a "
                     "later replay had {}: the retry ran the request again, so the API forgot "
                     "the lost request's key (or never ran the lost request: count effects with "
                     "--count-url to tell)",
                     retry.status, marker),
         reason::kLostRequestForgotten);
    return r;
  }
  detail::Agreed(ctx, r, why, retry_marker);
  return r;
}

ScenarioResult Retention(Context& ctx) {
  ScenarioResult r{.name = "retention"};
  r.expected_effects = 1;
  r.keys = {ctx.new_key()};
  const std::string kv = detail::KeyValue(ctx.plan, r.keys[0]);
  auto make = [&] { return detail::BuildRequest(ctx.plan, kv); };
  Answer first;
  if (!First(ctx, r, kv, first)) return r;
  const std::string after = retry::FormatDuration(ctx.plan.replay_after);
  ctx.Wait(ctx.plan.replay_after);
  if (ctx.DeadlinePassed()) {
    r.verdict = Verdict::kNotApplicable;
    r.reason = reason::kDeadline;
    r.why = fmt::format("the --deadline passed before the key could be sent again after {}",
                        after);
    return r;
  }
  Tries tries;
  const Answer later = detail::SendSettled(ctx, r, "after " + after, kv, make, tries);
  const std::string marker = detail::ReplayMarker(later);
  r.evidence += fmt::format("; {} later {}{}{}", after, Short(later), Before(tries),
                            WithMarker(marker));
  if (!detail::SameAnswer(first, later)) {
    Fail(r,
         fmt::format("the same key and body sent again {} later {}: the API forgot the key "
                     "before {} (run with --replay-after set to the retention it promises)",
                     after, Difference(first, later), after),
         reason::kKeyForgotten);
    return r;
  }
  detail::Agreed(ctx, r,
                 fmt::format("the same key and body sent again {} later got the first answer{}",
                             after, marker.empty() ? "" : " with " + marker),
                 marker);
  return r;
}

}  // namespace idem::check
