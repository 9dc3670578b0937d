// The scenarios that resend one request under one key: replay, mismatch, lost-answer.
#include <fmt/format.h>

#include <thread>

#include "check/body_variant.h"
#include "check/scenario.h"
#include "check/scenario_support.h"

namespace idem::check {
namespace {

using detail::Fail;
using detail::Short;

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

}  // namespace

ScenarioResult Replay(Context& ctx) {
  ScenarioResult r{.name = "replay"};
  r.keys = {ctx.new_key()};
  const std::string kv = detail::QuoteKey(r.keys[0]);
  auto make = [&] { return detail::BuildRequest(ctx.plan, kv); };
  int conflicts = 0;
  const Answer first = detail::SendSettled(ctx, r, "first", kv, make, conflicts);
  r.evidence = "first " + Short(first);
  if (detail::StopOnFirst(first, "the first request with a fresh key", r)) return r;
  const Answer second = detail::SendSettled(ctx, r, "replay", kv, make, conflicts);
  const std::string marker = detail::ReplayMarker(second);
  r.evidence += "; replay " + Short(second) + (marker.empty() ? "" : ", " + marker);
  if (!detail::SameAnswer(first, second)) {
    Fail(r, "the same key and body sent again " + Difference(first, second));
    return r;
  }
  r.why = fmt::format("the same key and body sent again got the same status and body{}",
                      marker.empty() ? " (no replay marker header)" : ", with " + marker);
  return r;
}

ScenarioResult Mismatch(Context& ctx) {
  ScenarioResult r{.name = "mismatch"};
  r.keys = {ctx.new_key()};
  const std::string kv = detail::QuoteKey(r.keys[0]);
  auto make = [&] { return detail::BuildRequest(ctx.plan, kv); };
  int conflicts = 0;
  const Answer first = detail::SendSettled(ctx, r, "first", kv, make, conflicts);
  r.evidence = "first " + Short(first);
  if (detail::StopOnFirst(first, "the first request with a fresh key", r)) return r;
  const BodyVariant other = OtherBody(ctx.plan.target.has_body ? ctx.plan.target.body : "");
  // Not re-sent on a 409: the first request has been answered, so a 409 here refuses the body.
  const Answer refused =
      detail::SendOne(ctx, r, "other body", kv, detail::BuildRequest(ctx.plan, kv, other.body));
  r.evidence += fmt::format("; other body ({}) {}", other.change, Short(refused));
  if (refused.status == 0 || refused.status / 100 != 4) {
    const std::string what = refused.status == 0 ? fmt::format("got no answer ({})", refused.error)
                             : detail::SameAnswer(first, refused)
                                 ? fmt::format("got the first answer ({})", refused.status)
                                 : fmt::format("was answered {}", refused.status);
    Fail(r, fmt::format("the same key with another body ({}) {}; it must be refused with a "
                        "4xx (422 per the IETF draft)",
                        other.change, what));
    return r;
  }
  const Answer again = detail::SendSettled(ctx, r, "again", kv, make, conflicts);
  r.evidence += "; first body again " + Short(again);
  if (!detail::SameAnswer(first, again)) {
    Fail(r, "after the other body was refused, the first request sent again " +
                Difference(first, again));
    return r;
  }
  r.why = fmt::format(
      "another body ({}) under the same key was refused with {}{}, and the "
      "first answer was replayed unchanged after it",
      other.change, refused.status, refused.status == 422 ? "" : " (422 per the IETF draft)");
  return r;
}

ScenarioResult LostAnswer(Context& ctx) {
  ScenarioResult r{.name = "lost-answer"};
  r.keys = {ctx.new_key()};
  const std::string kv = detail::QuoteKey(r.keys[0]);
  auto make = [&] { return detail::BuildRequest(ctx.plan, kv); };
  const Answer lost = ctx.prober.SendAndHangUp(ctx.plan.target.parsed, make());
  r.exchanges.push_back(detail::ExchangeOf("sent, then hung up", kv, lost));
  if (!lost.sent || !lost.error.empty()) {
    Fail(r, fmt::format("the request could not be sent: {}", lost.error));
    r.evidence = "hang-up request not sent";
    return r;
  }
  r.evidence = "sent and hung up before the answer";
  std::this_thread::sleep_for(ctx.lost_answer_pause);
  int conflicts = 0;
  const Answer retry = detail::SendSettled(ctx, r, "retry", kv, make, conflicts);
  const std::string retry_marker = detail::ReplayMarker(retry);
  r.evidence += "; retry " + Short(retry) +
                (conflicts > 0 ? fmt::format(" (after {}x 409)", conflicts) : "") +
                (retry_marker.empty() ? "" : ", " + retry_marker);
  if (detail::StopOnFirst(retry, "the retry after the lost answer", r)) return r;
  const Answer replay = detail::SendSettled(ctx, r, "replay", kv, make, conflicts);
  const std::string marker = detail::ReplayMarker(replay);
  r.evidence += "; replay " + Short(replay) + (marker.empty() ? "" : ", " + marker);
  if (!detail::SameAnswer(retry, replay)) {
    Fail(r, fmt::format("the retry after the lost answer got {}, but a later replay {}",
                        Short(retry), Difference(retry, replay)));
    return r;
  }
  r.why = fmt::format(
      "after an answer lost on a closed connection, the retry got {}{} and a later replay the "
      "same{}",
      retry.status, retry_marker.empty() ? "" : " (" + retry_marker + ": the lost request had run)",
      conflicts > 0 ? fmt::format("; {} answer(s) 409 while the first ran", conflicts) : "");
  return r;
}

}  // namespace idem::check
