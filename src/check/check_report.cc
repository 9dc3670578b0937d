#include "check/check_report.h"

#include <fmt/format.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#pragma GCC diagnostic pop

#include "idem/retry/duration.h"

namespace idem::check {
namespace {

namespace json = boost::json;

std::string Heading(const Plan& plan) {
  std::string counted =
      plan.count.has_value()
          ? fmt::format("effects counted by GET {}{}", plan.count->url,
                        plan.count->pointer.empty() ? "" : " at " + plan.count->pointer)
          : std::string("effects not counted (no --count-url)");
  return fmt::format("idem check {} {}: {} round{}, {} at once{}, {}\n", plan.target.method,
                     plan.target.url, plan.rounds, plan.rounds == 1 ? "" : "s", plan.concurrency,
                     plan.bursts == 1 ? "" : fmt::format(" in {} bursts", plan.bursts), counted);
}

// The round whose evidence a scenario's row shows: the first that failed (or was not
// applicable) when that is the overall verdict, else the last; `count` gets how many rounds had
// the overall verdict.
const ScenarioResult* Shown(const CheckReport& report, const std::string& name, Verdict overall,
                            int& count) {
  const ScenarioResult* first = nullptr;
  const ScenarioResult* last = nullptr;
  count = 0;
  for (const ScenarioResult& r : report.results) {
    if (r.name != name || r.verdict != overall) continue;
    ++count;
    if (first == nullptr) first = &r;
    last = &r;
  }
  return overall == Verdict::kFail || overall == Verdict::kNotApplicable ||
                 overall == Verdict::kInconclusive
             ? first
             : last;
}

// The reason code of scenario `name` over every round: that of the round its row shows.
std::string OverallReason(const CheckReport& report, const std::string& name) {
  int count = 0;
  const ScenarioResult* r = Shown(report, name, Overall(report.results, name), count);
  return r == nullptr ? std::string(reason::kNoEvidence) : r->reason;
}

json::value Nullable(const std::string& text) {
  return text.empty() ? json::value(nullptr) : json::value(text);
}

json::object ExchangeJson(const Exchange& e) {
  return {{"label", e.label},
          {"key", Nullable(e.key)},
          {"status", e.status == 0 ? json::value(nullptr) : json::value(e.status)},
          {"body_sha256", Nullable(e.body_sha256)},
          {"elapsed_ms", e.elapsed_ms},
          {"retry_after", Nullable(e.retry_after)},
          {"replayed", Nullable(e.replayed)},
          {"error", Nullable(e.error)}};
}

json::object ResultJson(const ScenarioResult& r) {
  json::array keys, exchanges;
  for (const std::string& k : r.keys) keys.emplace_back(k);
  for (const Exchange& e : r.exchanges) exchanges.emplace_back(ExchangeJson(e));
  return {{"name", r.name},
          {"round", r.round},
          {"result", std::string(VerdictName(r.verdict))},
          {"why", r.why},
          {"evidence", r.evidence},
          {"keys", std::move(keys)},
          {"effects", r.effects ? json::value(*r.effects) : json::value(nullptr)},
          {"elapsed_ms", r.elapsed_ms},
          {"exchanges", std::move(exchanges)},
          {"reason", r.reason}};
}

}  // namespace

std::string FormatTable(const Plan& plan, const CheckReport& report) {
  std::string out = Heading(plan);
  if (!report.stopped.empty()) return out + "stopped: " + report.stopped + "\n";
  for (const std::string& name : plan.scenarios) {
    const Verdict overall = Overall(report.results, name);
    int rounds = 0;
    const ScenarioResult* r = Shown(report, name, overall, rounds);
    if (r == nullptr) continue;
    std::string why = r->why;
    if (plan.rounds > 1) {
      why = overall == Verdict::kFail || overall == Verdict::kNotApplicable ||
                    overall == Verdict::kInconclusive
                ? fmt::format("round {} of {} (and {} more): {}", r->round, plan.rounds, rounds - 1,
                              why)
                : fmt::format("{} of {} rounds: {}", rounds, plan.rounds, why);
    }
    out += fmt::format("{:<12} {:<15} {}\n", name, VerdictName(overall), why);
    out += fmt::format("{:<12} {:<15} {}\n", "", "", r->evidence);
  }
  out += fmt::format("summary: {} passed, {} failed, {} not applicable, {} reported", report.passed,
                     report.failed, report.not_applicable, report.reported);
  if (report.reported > 0) out += " (no-key and bad-key are reported, never counted as passes)";
  if (report.inconclusive > 0) out += fmt::format(", {} inconclusive", report.inconclusive);
  out += fmt::format("; {} requests in {}", report.requests,
                     retry::FormatDuration(Millis(report.elapsed_ms)));
  if (!plan.count.has_value()) out += "; effects were not counted";
  out += "\n";
  if (!report.cut_short.empty()) out += "could not test: " + report.cut_short + "\n";
  return out;
}

std::string FormatJson(const Plan& plan, const CheckReport& report) {
  json::array scenarios;
  for (const ScenarioResult& r : report.results) scenarios.emplace_back(ResultJson(r));
  json::object summary, reasons;
  for (const std::string& name : plan.scenarios) {
    if (!report.stopped.empty()) break;  // no scenario ran
    summary[name] = std::string(VerdictName(Overall(report.results, name)));
    reasons[name] = OverallReason(report, name);
  }
  const json::object doc = {
      {"method", plan.target.method},
      {"url", plan.target.url},
      {"key_header", plan.key_header},
      {"rounds", plan.rounds},
      {"concurrency", plan.concurrency},
      {"effects_counted", plan.count.has_value()},
      {"count_url", plan.count ? json::value(plan.count->url) : json::value(nullptr)},
      {"count_pointer", plan.count && !plan.count->pointer.empty()
                            ? json::value(plan.count->pointer)
                            : json::value(nullptr)},
      {"exit_code", report.exit_code},
      {"stopped", Nullable(report.stopped)},
      {"passed", report.passed},
      {"failed", report.failed},
      {"not_applicable", report.not_applicable},
      {"reported", report.reported},
      {"requests", report.requests},
      {"elapsed_ms", report.elapsed_ms},
      {"verdicts", std::move(summary)},
      {"scenarios", std::move(scenarios)},
      {"inconclusive", report.inconclusive},
      {"reasons", std::move(reasons)},
      {"stop_reason", Nullable(report.stop_reason)},
      {"could_not_test", Nullable(report.cut_short)},
      {"bursts", plan.bursts},
      {"replay_after_ms", plan.replay_after.count()},
      {"key_format", std::string(KeyFormatName(plan.key_format))}};
  return json::serialize(doc) + "\n";
}

}  // namespace idem::check
