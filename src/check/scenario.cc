#include "check/scenario.h"

#include <fmt/format.h>

#include <chrono>
#include <exception>

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
  if (name == "no-key") return &NoKey;
  if (name == "bad-key") return &BadKey;
  return nullptr;
}

// Each of these uses one key whose request must take effect once.
bool ExpectsOneEffect(std::string_view name) {
  return name == "replay" || name == "mismatch" || name == "concurrent" || name == "lost-answer";
}

void JudgeEffects(ScenarioResult& r) {
  const int64_t effects = *r.effects;
  r.evidence += fmt::format("; {} effect{}", effects, effects == 1 ? "" : "s");
  if (!ExpectsOneEffect(r.name) || r.verdict == Verdict::kNotApplicable || effects == 1) return;
  const std::string counted =
      effects == 0 ? std::string(
                         "no effect counted for the key (expected 1: does --count-url "
                         "count this request's effects?)")
                   : fmt::format("{} effects for one key (expected 1)", effects);
  if (r.verdict == Verdict::kFail) {
    r.why += "; " + counted;
  } else {
    detail::Fail(r, counted);
  }
}

}  // namespace

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
  }
  return "fail";
}

ScenarioResult RunScenario(std::string_view name, Context& ctx) {
  const auto start = std::chrono::steady_clock::now();
  ScenarioResult r{.name = std::string(name)};
  try {
    const ScenarioFn fn = Find(name);
    if (fn == nullptr) {
      detail::Fail(r, fmt::format("no scenario is named '{}'", name));
      return r;
    }
    std::optional<int64_t> before;
    if (ctx.plan.count.has_value()) {
      absl::StatusOr<int64_t> c = ReadCount(ctx.prober, *ctx.plan.count);
      if (!c.ok()) {
        detail::Fail(r, fmt::format("effects could not be counted before the scenario: {}",
                                    std::string(c.status().message())));
        return r;
      }
      before = *c;
    }
    r = fn(ctx);
    if (before.has_value()) {
      absl::StatusOr<int64_t> after = ReadCount(ctx.prober, *ctx.plan.count);
      if (after.ok()) {
        r.effects = *after - *before;
        JudgeEffects(r);
      } else if (r.verdict != Verdict::kReported) {
        detail::Fail(r, fmt::format("effects could not be counted after the scenario: {}",
                                    std::string(after.status().message())));
      }
    }
  } catch (const std::exception& e) {
    detail::Fail(r, fmt::format("the scenario stopped on an internal error: {}", e.what()));
  }
  r.elapsed_ms =
      std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace idem::check
