// The concurrent scenario: N requests with one key at the same instant.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <thread>
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

// Re-sends the requests answered 409 together, after the longest Retry-After among them,
// until none is 409 or the retries are spent. Returns how many rounds of re-sends it took.
int SettleConflicts(Context& ctx, ScenarioResult& r, const std::string& kv,
                    std::vector<Answer>& answers) {
  int retries = 0;
  for (; retries < ctx.max_conflict_retries; ++retries) {
    std::vector<size_t> pending;
    Millis wait{0};
    for (size_t i = 0; i < answers.size(); ++i) {
      if (answers[i].status != 409) continue;
      pending.push_back(i);
      wait = std::max(wait, detail::ConflictWait(ctx, answers[i], retries + 1));
    }
    if (pending.empty()) break;
    std::this_thread::sleep_for(wait);
    std::vector<http::Request> again;
    for (size_t j = 0; j < pending.size(); ++j) again.push_back(detail::BuildRequest(ctx.plan, kv));
    std::vector<Answer> got = ctx.prober.SendTogether(ctx.plan.target.parsed, std::move(again));
    for (size_t j = 0; j < pending.size(); ++j) {
      r.exchanges.push_back(detail::ExchangeOf(
          fmt::format("{} of {}, again after 409", pending[j] + 1, answers.size()), kv, got[j]));
      answers[pending[j]] = std::move(got[j]);
    }
  }
  return retries;
}

}  // namespace

ScenarioResult Concurrent(Context& ctx) {
  ScenarioResult r{.name = "concurrent"};
  r.keys = {ctx.new_key()};
  const std::string kv = detail::QuoteKey(r.keys[0]);
  const size_t n = static_cast<size_t>(ctx.plan.concurrency);
  std::vector<http::Request> requests;
  for (size_t i = 0; i < n; ++i) requests.push_back(detail::BuildRequest(ctx.plan, kv));
  std::vector<Answer> answers =
      ctx.prober.SendTogether(ctx.plan.target.parsed, std::move(requests));
  for (size_t i = 0; i < n; ++i) {
    r.exchanges.push_back(
        detail::ExchangeOf(fmt::format("{} of {} at once", i + 1, n), kv, answers[i]));
  }
  int conflicts = 0, with_retry_after = 0;
  for (const Answer& a : answers) {
    if (a.status != 409) continue;
    ++conflicts;
    if (!a.Header("Retry-After").empty()) ++with_retry_after;
  }
  r.evidence = fmt::format("{} at once: {}", n, Tally(answers));
  if (SettleConflicts(ctx, r, kv, answers) > 0) {
    r.evidence += fmt::format("; after re-sending the 409s: {}", Tally(answers));
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
    Fail(r, fmt::format("{} requests with one key got {} different answers: {}", n, held.size(),
                        list));
    return r;
  }
  const Answer& one = *held[0].first;
  if (detail::StopOnFirst(one, fmt::format("every one of {} requests with one key", n), r)) {
    return r;
  }
  r.why = fmt::format("all {} requests with one key hold one answer ({})", n, one.status);
  if (conflicts > 0) {
    r.why += fmt::format(
        "; {} were answered 409 first ({} with Retry-After) and got it when sent "
        "again",
        conflicts, with_retry_after);
  }
  return r;
}

}  // namespace idem::check
