#include "check/scenario.h"

#include <fmt/format.h>

#include <chrono>
#include <algorithm>
#include <exception>
#include <thread>

#include "check/effect_counter.h"
#include "check/scenario_support.h"

namespace idem::check {
namespace {

using ScenarioFn = ScenarioResult (*)(Context&);

ScenarioFn Find(std::string_view name) {
  if (name == "replay") return &Replay;
  if (name == "mismatch") return &Mismatch;
  if (name == "concurrent") return &Concurrent;
  if (name == "lost-answer") return &LostAnswer;
  if (name == "retention") return &Retention;
  if (name == "no-key") return &NoKey;
  if (name == "bad-key") return &BadKey;
  return nullptr;
}

using SteadyClock = std::chrono::steady_clock;

// Each key of a keyed scenario that was served must take effect once: r.expected_effects.
void JudgeEffects(ScenarioResult& r) {
  const int64_t effects = *r.effects;
  r.evidence += fmt::format("; {} effect{}", effects, effects == 1 ? "" : "s");
  const int64_t expected = r.expected_effects;
  if (expected < 0 || r.verdict == Verdict::kNotApplicable || effects == expected) return;
  const std::string keys = expected == 1 ? "one key" : fmt::format("{} keys", expected);
  const std::string counted =
      effects == 0 ? fmt::format(
                         "no effect counted for {} (expected {}: does --count-url count this "
                         "request's effects?)",
                         keys, expected)
                   : fmt::format("{} effect{} for {} (expected {})", effects,
                                 effects == 1 ? "" : "s", keys, expected);
  if (r.verdict == Verdict::kFail) {
    r.why += "; " + counted;
  } else {
    r.verdict = Verdict::kPass;  // so that Fail replaces the why
    detail::Fail(r, counted, reason::kEffectCount);
  }
}

// Reads the count until it has not changed for ctx.count_quiet, so that an effect landing just
// after the last answer is counted for the scenario that caused it; for ctx.count_settle_max at
// most (then the last value read).
absl::StatusOr<int64_t> SettledCount(Context& ctx) {
  const auto start = SteadyClock::now();
  absl::StatusOr<int64_t> last = ReadCount(ctx.prober, *ctx.plan.count);
  if (!last.ok()) return last;
  auto unchanged_since = SteadyClock::now();
  while (SteadyClock::now() - unchanged_since < ctx.count_quiet &&
         SteadyClock::now() - start < ctx.count_settle_max && !ctx.DeadlinePassed()) {
    ctx.Wait(ctx.count_poll);
    absl::StatusOr<int64_t> now = ReadCount(ctx.prober, *ctx.plan.count);
    if (!now.ok()) return now;
    if (*now != *last) {
      last = now;
      unchanged_since = SteadyClock::now();
    }
  }
  return last;
}

}  // namespace

void Context::Wait(Millis d) const {
  const auto until = std::min(deadline, SteadyClock::now() + d);
  std::this_thread::sleep_until(until);
}

absl::StatusOr<int64_t> ReadSettledCount(Context& ctx) { return SettledCount(ctx); }

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kFail:
      return "fail";
    case Verdict::kNotApplicable:
      return "not-applicable";
    case Verdict::kReported:
      return "reported";
    case Verdict::kInconclusive:
      return "inconclusive";
  }
  return "fail";
}

ScenarioResult RunScenario(std::string_view name, Context& ctx) {
  const auto start = std::chrono::steady_clock::now();
  ScenarioResult r{.name = std::string(name)};
  try {
    const ScenarioFn fn = Find(name);
    if (fn == nullptr) {
      detail::Fail(r, fmt::format("no scenario is named '{}'", name), reason::kInternal);
      return r;
    }
    std::optional<int64_t> before;
    if (ctx.plan.count.has_value()) {
      // The settled count after the scenario before is this one's start: every effect is
      // attributed to exactly one scenario.
      absl::StatusOr<int64_t> c =
          ctx.last_count.has_value() ? absl::StatusOr<int64_t>(*ctx.last_count) : SettledCount(ctx);
      if (!c.ok()) {
        detail::Fail(r,
                     fmt::format("effects could not be counted before the scenario: {}",
                                 std::string(c.status().message())),
                     reason::kCountUnreadable);
        return r;
      }
      before = *c;
    }
    r = fn(ctx);
    if (before.has_value()) {
      absl::StatusOr<int64_t> after = SettledCount(ctx);
      ctx.last_count.reset();
      if (after.ok()) {
        ctx.last_count = *after;
        r.effects = *after - *before;
        JudgeEffects(r);
      } else if (r.verdict != Verdict::kReported) {
        detail::Fail(r,
                     fmt::format("effects could not be counted after the scenario: {}",
                                 std::string(after.status().message())),
                     reason::kCountUnreadable);
      }
    }
  } catch (const std::exception& e) {
    detail::Fail(r, fmt::format("the scenario stopped on an internal error: {}", e.what()),
                 reason::kInternal);
  }
  r.elapsed_ms =
      std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace idem::check
