#include "check/check_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>
#pragma GCC diagnostic pop

namespace idem::check {
namespace {

using ::testing::HasSubstr;

ScenarioResult Result(const std::string& name, int round, Verdict v, const std::string& why) {
  return ScenarioResult{.name = name,
                        .round = round,
                        .verdict = v,
                        .why = why,
                        .evidence = "evidence of " + name + " " + std::to_string(round)};
}

TEST(Overall, AFailedRoundFailsTheScenario) {
  const std::vector<ScenarioResult> results = {Result("replay", 1, Verdict::kPass, ""),
                                               Result("replay", 2, Verdict::kFail, ""),
                                               Result("replay", 3, Verdict::kNotApplicable, ""),
                                               Result("no-key", 1, Verdict::kReported, "")};
  EXPECT_EQ(Overall(results, "replay"), Verdict::kFail);
  EXPECT_EQ(Overall(results, "no-key"), Verdict::kReported);
  EXPECT_EQ(Overall({results[0], results[2]}, "replay"), Verdict::kNotApplicable);
  EXPECT_EQ(Overall({results[0]}, "replay"), Verdict::kPass);
}

Plan TwoRounds() {
  Plan plan;
  plan.target.url = "http://127.0.0.1:8080/charges";
  plan.rounds = 2;
  plan.scenarios = {"replay", "no-key"};
  return plan;
}

TEST(FormatTable, ShowsARowPerScenarioWithTheFirstFailingRoundsEvidence) {
  CheckReport report;
  report.results = {Result("replay", 1, Verdict::kPass, "same"),
                    Result("no-key", 1, Verdict::kReported, "refused with 400"),
                    Result("replay", 2, Verdict::kFail, "2 effects for one key (expected 1)"),
                    Result("no-key", 2, Verdict::kReported, "refused with 400")};
  report.failed = 1;
  report.reported = 1;
  report.requests = 7;
  const std::string table = FormatTable(TwoRounds(), report);
  EXPECT_THAT(table, HasSubstr("idem check POST http://127.0.0.1:8080/charges: 2 rounds"));
  EXPECT_THAT(table, HasSubstr("replay       fail            round 2 of 2 (and 0 more): 2 effects "
                               "for one key (expected 1)\n"));
  EXPECT_THAT(table, HasSubstr("evidence of replay 2\n"));
  EXPECT_THAT(table, HasSubstr("no-key       reported        2 of 2 rounds: refused with 400\n"));
  EXPECT_THAT(table, HasSubstr("summary: 0 passed, 1 failed, 0 not applicable, 1 reported"));
  EXPECT_THAT(table, HasSubstr("effects were not counted"));
}

TEST(FormatJson, CarriesEveryRoundAndTheDocumentedFields) {
  CheckReport report;
  ScenarioResult r = Result("replay", 1, Verdict::kPass, "same");
  r.effects = 1;
  r.keys = {"k1"};
  r.exchanges = {Exchange{
      .label = "first", .key = "\"k1\"", .status = 201, .body_sha256 = "ab", .elapsed_ms = 3}};
  report.results = {r};
  report.passed = 1;
  const boost::json::value doc = boost::json::parse(FormatJson(TwoRounds(), report));
  const boost::json::object& o = doc.as_object();
  for (const char* field :
       {"method", "url", "key_header", "rounds", "concurrency", "effects_counted", "count_url",
        "count_pointer", "exit_code", "stopped", "passed", "failed", "not_applicable", "reported",
        "requests", "elapsed_ms", "verdicts", "scenarios", "inconclusive", "reasons",
        "stop_reason", "could_not_test", "bursts", "replay_after_ms", "key_format"}) {
    EXPECT_TRUE(o.contains(field)) << field;
  }
  EXPECT_EQ(o.at("verdicts").at("replay"), "pass");
  const boost::json::object& s = o.at("scenarios").at(0).as_object();
  EXPECT_EQ(s.at("result"), "pass");
  EXPECT_EQ(s.at("effects"), 1);
  EXPECT_EQ(s.at("exchanges").at(0).at("status"), 201);
  EXPECT_TRUE(s.at("exchanges").at(0).at("error").is_null());
}

TEST(Overall, AnInconclusiveRoundMakesThePassInconclusive) {
  const std::vector<ScenarioResult> results = {Result("replay", 1, Verdict::kPass, ""),
                                               Result("replay", 2, Verdict::kInconclusive, "")};
  EXPECT_EQ(Overall(results, "replay"), Verdict::kInconclusive);
  EXPECT_EQ(VerdictName(Verdict::kInconclusive), "inconclusive");
}

TEST(FormatJson, GivesEachVerdictItsReasonCode) {
  CheckReport report;
  ScenarioResult r = Result("replay", 1, Verdict::kInconclusive, "no marker");
  r.reason = std::string(reason::kNoEvidence);
  ScenarioResult k = Result("no-key", 1, Verdict::kReported, "refused with 400");
  k.reason = std::string(reason::kReported);
  report.results = {r, k};
  report.inconclusive = 1;
  report.reported = 1;
  report.exit_code = kExitUnreachable;
  report.stop_reason = std::string(stop_reason::kNoVerdict);
  report.cut_short = "no keyed scenario reached a verdict";
  Plan plan = TwoRounds();
  plan.rounds = 1;
  const boost::json::object o = boost::json::parse(FormatJson(plan, report)).as_object();
  EXPECT_EQ(o.at("verdicts").at("replay"), "inconclusive");
  EXPECT_EQ(o.at("reasons").at("replay"), "no-evidence");
  EXPECT_EQ(o.at("reasons").at("no-key"), "reported");
  EXPECT_EQ(o.at("scenarios").at(0).at("reason"), "no-evidence");
  EXPECT_EQ(o.at("stop_reason"), "no-verdict");
  EXPECT_EQ(o.at("inconclusive"), 1);
  const std::string table = FormatTable(plan, report);
  EXPECT_THAT(table, HasSubstr("replay       inconclusive    no marker\n"));
  EXPECT_THAT(table, HasSubstr(", 1 inconclusive;"));
  EXPECT_THAT(table, HasSubstr("could not test: no keyed scenario reached a verdict\n"));
}

}  // namespace
}  // namespace idem::check
