// The concurrent scenario: N requests with one key at the same instant.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <utility>

#include "check/scenario.h"
#include "check/scenario_support.h"

namespace idem::check {
namespace {

using detail::Fail;

// "1x 201 sha256:..., 7x 409 (Retry-After: 1)": the answers grouped, in order of first sight.
std::string Tally(const std::vector<Answer>& answers) {
  std::vector<std::pair<std::string, int>> groups;
  for (const Answer& a : answers) {
    std::string name;
    if (a.status == 0) {
      name = fmt::format("no answer ({})", a.error);
    } else if (a.status == 409) {
      const std::string after = a.Header("Retry-After");
      name = after.empty() ? "409 (no Retry-After)" : fmt::format("409 (Retry-After: {})", after);
    } else {
      name = fmt::format("{} {}", a.status, detail::Digest(a));
    }
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == name; });
    if (it == groups.end()) {
      groups.emplace_back(name, 1);
    } else {
      ++it->second;
    }
  }
  std::string out;
  for (const auto& [name, n] : groups)
    out += fmt::format("{}{}x {}", out.empty() ? "" : ", ", n, name);
  return out;
}

// The distinct answers (status and body) among `answers`, each with how many got it.
std::vector<std::pair<const Answer*, int>> Distinct(const std::vector<Answer>& answers) {
  std::vector<std::pair<const Answer*, int>> out;
  for (const Answer& a : answers) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const auto& d) { return detail::SameAnswer(*d.first, a); });
    if (it == out.end()) {
      out.emplace_back(&a, 1);
    } else {
      ++it->second;
    }
  }
  return out;
}

// Re-sends the requests answered 409 (after the longest Retry-After among them) or 5xx (a
// transient failure must not be kept for the key) together, until none is, or the re-sends are
// spent. Returns how many rounds of re-sends it took; `replayed_error` gets a 5xx that carried a
// replay marker.
int SettleConflicts(Context& ctx, ScenarioResult& r, const std::string& kv, int burst,
                    std::vector<Answer>& answers, std::string& replayed_error) {
  int retries = 0;
  const int most = std::max(ctx.max_conflict_retries, ctx.server_error_resends);
  for (; retries < most && !ctx.DeadlinePassed(); ++retries) {
    std::vector<size_t> pending;
    Millis wait{0};
    for (size_t i = 0; i < answers.size(); ++i) {
      if (answers[i].status >= 500) {
        const std::string marker = detail::ReplayMarker(answers[i]);
        if (!marker.empty() && replayed_error.empty()) {
          replayed_error = fmt::format("{} with {}", answers[i].status, marker);
        }
        if (retries >= ctx.server_error_resends) continue;  // re-sent enough
        pending.push_back(i);
        wait = std::max(wait, std::min(ctx.max_conflict_wait,
                                       ctx.server_error_wait * (int64_t{1} << retries)));
      } else if (answers[i].status == 409) {
        pending.push_back(i);
        wait = std::max(wait,
                        detail::ConflictWait(ctx, answers[i], retries + 1, ctx.burst_conflict_wait));
      }
    }
    // A replayed 5xx decided the burst: a transient failure was kept.
    if (pending.empty() || !replayed_error.empty()) break;
    ctx.Wait(wait);
    std::vector<http::Request> again;
    for (size_t j = 0; j < pending.size(); ++j) again.push_back(detail::BuildRequest(ctx.plan, kv));
    std::vector<Answer> got = ctx.prober.SendTogether(ctx.plan.target.parsed, std::move(again));
    for (size_t j = 0; j < pending.size(); ++j) {
      detail::NoteAnswer(ctx, got[j]);
      r.exchanges.push_back(detail::ExchangeOf(
          fmt::format("burst {}: {} of {}, again after {}", burst, pending[j] + 1, answers.size(),
                      answers[pending[j]].status),
          kv, got[j]));
      answers[pending[j]] = std::move(got[j]);
    }
  }
  return retries;
}

// One burst: `n` requests with one fresh key at once. Returns false when it decided the
// scenario (r's verdict set); `marked` gets how many of its answers carried a replay marker.
bool Burst(Context& ctx, ScenarioResult& r, int burst, int& marked) {
  const std::string key = ctx.new_key();
  r.keys.push_back(key);
  ++r.expected_effects;  // each burst's key must take effect once
  const std::string kv = detail::KeyValue(ctx.plan, key);
  const size_t n = static_cast<size_t>(ctx.plan.concurrency);
  std::vector<http::Request> requests;
  for (size_t i = 0; i < n; ++i) requests.push_back(detail::BuildRequest(ctx.plan, kv));
  std::vector<Answer> answers =
      ctx.prober.SendTogether(ctx.plan.target.parsed, std::move(requests));
  for (size_t i = 0; i < n; ++i) {
    detail::NoteAnswer(ctx, answers[i]);
    r.exchanges.push_back(detail::ExchangeOf(
        fmt::format("burst {}: {} of {} at once", burst, i + 1, n), kv, answers[i]));
  }
  int conflicts = 0, with_retry_after = 0;
  for (const Answer& a : answers) {
    if (a.status != 409) continue;
    ++conflicts;
    if (!a.Header("Retry-After").empty()) ++with_retry_after;
  }
  const std::string prefix = ctx.plan.bursts > 1 ? fmt::format("burst {}: ", burst) : "";
  r.evidence = fmt::format("{}{} at once: {}", prefix, n, Tally(answers));
  std::string replayed_error;
  if (SettleConflicts(ctx, r, kv, burst, answers, replayed_error) > 0) {
    r.evidence += fmt::format("; after re-sending the 409s and 5xx: {}", Tally(answers));
  }
  if (!replayed_error.empty()) {
    Fail(r,
         fmt::format("{}a request answered 5xx was answered {} when sent again with its key: a "
                     "transient failure was kept as the key's answer",
                     prefix, replayed_error),
         reason::kServerErrorCached);
    return false;
  }
  const std::vector<std::pair<const Answer*, int>> held = Distinct(answers);
  if (held.size() > 1) {
    std::string list;
    constexpr size_t kShown = 3;
    for (size_t i = 0; i < held.size() && i < kShown; ++i) {
      list += fmt::format("{}{}x {} {}", list.empty() ? "" : ", ", held[i].second,
                          detail::Short(*held[i].first), detail::Excerpt(held[i].first->body));
    }
    if (held.size() > kShown) list += fmt::format(", and {} more", held.size() - kShown);
    Fail(r,
         fmt::format("{}{} requests with one key got {} different answers: {}", prefix, n,
                     held.size(), list),
         reason::kSeveralAnswers);
    return false;
  }
  const Answer& one = *held[0].first;
  if (detail::StopOnFirst(ctx, one, fmt::format("every one of {} requests with one key", n), r)) {
    return false;
  }
  marked = static_cast<int>(std::count_if(answers.begin(), answers.end(), [](const Answer& a) {
    return !detail::ReplayMarker(a).empty();
  }));
  const int unmarked = static_cast<int>(n) - marked;
  if (marked > 0 && unmarked > 1) {
    // The API marks its replays, so every answer without a marker is a run of the request.
    Fail(r,
         fmt::format("{}{} of {} answers with one key carried no replay marker while {} did: the "
                     "request ran {} times",
                     prefix, unmarked, n, marked, unmarked),
         reason::kRanMoreThanOnce);
    return false;
  }
  r.why = fmt::format("all {} requests with one key hold one answer ({})", n, one.status);
  if (conflicts > 0) {
    r.why += fmt::format(
        "; {} were answered 409 first ({} with Retry-After) and got it when sent "
        "again",
        conflicts, with_retry_after);
  }
  return true;
}

}  // namespace

ScenarioResult Concurrent(Context& ctx) {
  ScenarioResult r{.name = "concurrent"};
  r.expected_effects = 0;
  int bursts = 0, with_marker = 0;
  std::string example;  // a replay marker seen
  for (int b = 1; b <= ctx.plan.bursts; ++b) {
    if (ctx.DeadlinePassed()) break;
    int marked = 0;
    if (!Burst(ctx, r, b, marked)) return r;
    ++bursts;
    if (marked > 0) ++with_marker;
  }
  if (bursts == 0) {
    r.verdict = Verdict::kNotApplicable;
    r.reason = reason::kDeadline;
    r.why = "the --deadline passed before a burst was sent";
    return r;
  }
  for (const Exchange& e : r.exchanges) {
    if (!e.replayed.empty()) {
      example = e.replayed;
      break;
    }
  }
  const std::string why =
      bursts == 1 ? r.why
                  : fmt::format("{} bursts, each with a new key: {}{}", bursts, r.why,
                                with_marker > 0 ? fmt::format("; {} of {} bursts showed {} on "
                                                              "every answer but one",
                                                              with_marker, bursts, example)
                                                : "");
  // Evidence: every burst had its replays marked (the one unmarked answer was the one run).
  detail::Agreed(ctx, r, why, with_marker == bursts ? example : "");
  if (bursts < ctx.plan.bursts && r.verdict != Verdict::kFail) {
    r.why += fmt::format(" (only {} of {} bursts before the --deadline)", bursts,
                         ctx.plan.bursts);
  }
  return r;
}

}  // namespace idem::check
