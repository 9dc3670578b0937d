// The zoo (docs/idem-check.md, "The zoo"): the real idem binary runs `idem check` against the
// zoo's APIs (tests/check/zoo_api.h), one correct and one broken variant for every behaviour the
// checker must tell apart, and each run must end with the verdict the truth calls for: never a
// pass for a broken or untestable API, never a failure for a correct one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/json.hpp>
#pragma GCC diagnostic pop

#include "e2e_support.h"
#include "http/test_server.h"
#include "zoo_api.h"

namespace idem::check_zoo {
namespace {

namespace json = boost::json;
using e2e::RunResult;
using ::testing::HasSubstr;

const std::string kBody = R"({"amount":4200,"currency":"eur"})";

struct ZooCase {
  std::string name;  // the test's name
  std::string flaw;
  std::string truth;  // "correct", "broken" or "untestable" (as the run is set up)
  std::vector<std::string> flags;
  int exit_code = 0;
  // scenario -> "verdict" or "verdict/reason"
  std::map<std::string, std::string> verdicts;
  bool counted = false;       // --count-url GET /count --count-pointer /effects
  std::string path = "/charges";
  std::string in_output;      // a phrase the output must hold
};

void PrintTo(const ZooCase& c, std::ostream* os) { *os << c.name; }

json::object Report(const RunResult& run) {
  const size_t at = run.output.find("{\"method\"");
  if (at == std::string::npos) return {};
  json::error_code ec;
  json::value v = json::parse(run.output.substr(at, run.output.find('\n', at) - at), ec);
  return ec || !v.is_object() ? json::object{} : v.as_object();
}

// Runs `idem check` on `url` with the case's flags (and --replay-after 1s unless they give it).
RunResult Check(const ZooCase& c, const std::string& url, const std::string& count_url) {
  char dir[] = "/tmp/idem-check-zoo-XXXXXX";
  EXPECT_NE(mkdtemp(dir), nullptr);
  std::vector<std::string> argv = {IDEM_BINARY, "check", url, "-d", kBody, "-H",
                                   "Content-Type: application/json", "--json"};
  if (std::find(c.flags.begin(), c.flags.end(), "--replay-after") == c.flags.end()) {
    argv.insert(argv.end(), {"--replay-after", "1s"});  // short, for the zoo's bound
  }
  if (c.counted) {
    for (const std::string& f : {std::string("--count-url"), count_url,
                                 std::string("--count-pointer"), std::string("/effects")}) {
      argv.push_back(f);
    }
  }
  argv.insert(argv.end(), c.flags.begin(), c.flags.end());
  RunResult run = e2e::RunToExit(argv, dir, std::chrono::seconds(90));
  std::filesystem::remove_all(dir);
  return run;
}

void ExpectVerdicts(const ZooCase& c, const RunResult& run) {
  EXPECT_EQ(run.exit_code, c.exit_code) << c.name << " (" << c.truth << "):\n" << run.output;
  const json::object report = Report(run);
  ASSERT_FALSE(report.empty()) << run.output;
  EXPECT_EQ(report.at("exit_code"), c.exit_code);
  for (const auto& [name, want] : c.verdicts) {
    const size_t slash = want.find('/');
    const json::value* verdict = report.at("verdicts").as_object().if_contains(name);
    ASSERT_NE(verdict, nullptr) << name << ": " << run.output;
    EXPECT_EQ(*verdict, want.substr(0, slash).c_str()) << name << ":\n" << run.output;
    if (slash != std::string::npos) {
      EXPECT_EQ(report.at("reasons").at(name), want.substr(slash + 1).c_str())
          << name << ":\n" << run.output;
    }
  }
  if (!c.in_output.empty()) {
    EXPECT_THAT(run.output, HasSubstr(c.in_output));
  }
}

class Zoo : public ::testing::TestWithParam<ZooCase> {};

TEST_P(Zoo, GivesTheVerdictTheTruthCallsFor) {
  const ZooCase& c = GetParam();
  ZooApi api(c.flaw);
  ZooServer server(api);
  ASSERT_NE(server.port(), 0);
  const RunResult run = Check(c, server.Url(c.path), server.Url("/count"));
  ExpectVerdicts(c, run);
}

const std::vector<std::string> kKeyedFast = {"--only", "replay,mismatch,lost-answer",
                                            "--bursts", "3"};

std::vector<std::string> Flags(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

const std::vector<ZooCase> kZoo = {
    // Every scenario, at the default of 20 bursts: every keyed one passes on replay markers.
    {.name = "Correct",
     .flaw = "correct",
     .truth = "correct",
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"},
                  {"mismatch", "pass/replay-marker"},
                  {"concurrent", "pass/replay-marker"},
                  {"lost-answer", "pass/replay-marker"},
                  {"retention", "pass/replay-marker"},
                  {"no-key", "reported"},
                  {"bad-key", "reported"}}},
    {.name = "NoIdempotency",
     .flaw = "no-idempotency",
     .truth = "broken",
     .flags = {"--bursts", "3"},
     .exit_code = 1,
     .verdicts = {{"replay", "fail/other-answer"},
                  {"mismatch", "fail/other-body-accepted"},
                  {"concurrent", "fail/several-answers"},
                  {"retention", "fail/key-forgotten"}}},
    // 1. Untestable: exit 3, saying why; and the same API given what it needs.
    {.name = "NeedsCredentialsNotGiven",
     .flaw = "needs-auth",
     .truth = "untestable",
     .flags = {"--bursts", "3"},
     .exit_code = 3,
     .verdicts = {{"replay", "not-applicable/credentials-missing"},
                  {"concurrent", "not-applicable/credentials-missing"}},
     .in_output = "credentials are missing"},
    {.name = "NeedsCredentialsGiven",
     .flaw = "needs-auth",
     .truth = "correct",
     .flags = Flags({"-H", "Authorization: Bearer zoo"}, kKeyedFast),
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"}, {"lost-answer", "pass/replay-marker"}}},
    {.name = "RedirectNotFollowed",
     .flaw = "redirect",
     .truth = "untestable",
     .flags = kKeyedFast,
     .exit_code = 3,
     .verdicts = {{"replay", "not-applicable/redirect"}},
     .in_output = "/v2/charges"},
    {.name = "RedirectTarget",
     .flaw = "redirect",
     .truth = "correct",
     .flags = kKeyedFast,
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"}},
     .path = "/v2/charges"},
    {.name = "RawKeysSentQuoted",
     .flaw = "raw-keys",
     .truth = "untestable",
     .flags = kKeyedFast,
     .exit_code = 3,
     .verdicts = {{"replay", "not-applicable/request-refused"}},
     .in_output = "--key-format"},
    {.name = "RawKeysSentRaw",
     .flaw = "raw-keys",
     .truth = "correct",
     .flags = Flags({"--key-format", "raw"}, kKeyedFast),
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"}, {"mismatch", "pass/replay-marker"}}},
    {.name = "RawKeysSentAsTokens",
     .flaw = "raw-keys",
     .truth = "correct",
     .flags = Flags({"--key-format", "token"}, kKeyedFast),
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"}}},
    // 2. Retention.
    {.name = "KeepsKeys",
     .flaw = "correct",
     .truth = "correct",
     .flags = {"--only", "replay,retention"},
     .exit_code = 0,
     .verdicts = {{"retention", "pass/replay-marker"}}},
    {.name = "ForgetsKeysAfterHalfASecond",
     .flaw = "forgets-after",
     .truth = "broken",
     .flags = {"--only", "replay,retention"},
     .exit_code = 1,
     .verdicts = {{"replay", "pass/replay-marker"}, {"retention", "fail/key-forgotten"}}},
    // 3. Races: 20 bursts (the default).
    {.name = "ClaimsKeysAtomically",
     .flaw = "correct",
     .truth = "correct",
     .flags = {"--only", "concurrent"},
     .exit_code = 0,
     .verdicts = {{"concurrent", "pass/replay-marker"}}},
    {.name = "LooksUpThenStores",
     .flaw = "racy",
     .truth = "broken",
     .flags = {"--only", "replay,concurrent"},
     .exit_code = 1,
     .verdicts = {{"replay", "pass/replay-marker"}, {"concurrent", "fail"}}},
    // 4. No pass without evidence.
    {.name = "NoMarkerNotCounted",
     .flaw = "no-marker",
     .truth = "untestable",
     .flags = {"--bursts", "3"},
     .exit_code = 3,
     .verdicts = {{"replay", "inconclusive/no-evidence"},
                  {"concurrent", "inconclusive/no-evidence"},
                  {"retention", "inconclusive/no-evidence"}},
     .in_output = "inconclusive (count effects with --count-url, or send a replay marker)"},
    {.name = "NoMarkerCounted",
     .flaw = "no-marker",
     .truth = "correct",
     .flags = {"--bursts", "3"},
     .exit_code = 0,
     .verdicts = {{"replay", "pass/one-effect-per-key"},
                  {"mismatch", "pass/one-effect-per-key"},
                  {"concurrent", "pass/one-effect-per-key"},
                  {"lost-answer", "pass/one-effect-per-key"},
                  {"retention", "pass/one-effect-per-key"}},
     .counted = true},
    // Agreeing answers prove nothing here; only mismatch shows the flaw.
    {.name = "RunsEveryRequestSameBodyNotCounted",
     .flaw = "deterministic",
     .truth = "broken",
     .flags = {"--bursts", "3"},
     .exit_code = 1,
     .verdicts = {{"replay", "inconclusive/no-evidence"},
                  {"mismatch", "fail/other-body-accepted"},
                  {"concurrent", "inconclusive/no-evidence"},
                  {"retention", "inconclusive/no-evidence"}}},
    {.name = "RunsEveryRequestSameBodyNoMismatch",
     .flaw = "deterministic",
     .truth = "untestable",
     .flags = {"--only", "replay,concurrent,lost-answer", "--bursts", "3"},
     .exit_code = 3,
     .verdicts = {{"replay", "inconclusive/no-evidence"},
                  {"concurrent", "inconclusive/no-evidence"},
                  {"lost-answer", "inconclusive/no-evidence"}},
     .in_output = "\"stop_reason\":\"no-verdict\""},
    {.name = "RunsEveryRequestSameBodyCounted",
     .flaw = "deterministic",
     .truth = "broken",
     .flags = {"--bursts", "3"},
     .exit_code = 1,
     .verdicts = {{"replay", "fail/effect-count"},
                  {"concurrent", "fail/effect-count"},
                  {"lost-answer", "fail/effect-count"}},
     .counted = true},
    {.name = "ForgetsKeyOnHangUpNotCounted",
     .flaw = "forget-on-hangup",
     .truth = "broken",
     .flags = {"--only", "replay,lost-answer"},
     .exit_code = 1,
     .verdicts = {{"replay", "pass/replay-marker"},
                  {"lost-answer", "fail/lost-request-forgotten"}}},
    {.name = "ForgetsKeyOnHangUpCounted",
     .flaw = "forget-on-hangup",
     .truth = "broken",
     .flags = {"--only", "replay,lost-answer"},
     .exit_code = 1,
     .verdicts = {{"lost-answer", "fail/effect-count"}},
     .counted = true},
    {.name = "KeepsKeyOnHangUp",
     .flaw = "correct",
     .truth = "correct",
     .flags = {"--only", "replay,lost-answer"},
     .exit_code = 0,
     .verdicts = {{"lost-answer", "pass/replay-marker"}},
     .counted = true},
    // 5. Effects settle before they are read, each counted for its own scenario.
    {.name = "SlowEffects",
     .flaw = "slow-effect",
     .truth = "correct",
     .flags = {"--bursts", "3"},
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"},
                  {"mismatch", "pass/replay-marker"},
                  {"concurrent", "pass/replay-marker"},
                  {"lost-answer", "pass/replay-marker"},
                  {"retention", "pass/replay-marker"}},
     .counted = true},
    {.name = "LateDuplicateEffects",
     .flaw = "late-duplicate",
     .truth = "broken",
     .flags = {"--bursts", "3"},
     .exit_code = 1,
     .verdicts = {{"replay", "fail/effect-count"},
                  {"mismatch", "fail/effect-count"},
                  {"concurrent", "fail/effect-count"}},
     .counted = true},
    // 6. 5xx.
    {.name = "TransientServerErrors",
     .flaw = "transient-500",
     .truth = "correct",
     .flags = {"--bursts", "5"},
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"},
                  {"mismatch", "pass/replay-marker"},
                  {"concurrent", "pass/replay-marker"},
                  {"lost-answer", "pass/one-effect-per-key"},
                  {"retention", "pass/replay-marker"}},
     .counted = true},
    {.name = "TransientServerErrorsNotCounted",
     .flaw = "transient-500",
     .truth = "correct",
     .flags = {"--only", "replay,mismatch,concurrent,retention", "--bursts", "5"},
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"}, {"concurrent", "pass/replay-marker"}}},
    {.name = "CachesServerErrors",
     .flaw = "cache-500",
     .truth = "broken",
     .flags = {"--bursts", "3"},
     .exit_code = 1,
     .verdicts = {{"replay", "fail/server-error-cached"},
                  {"concurrent", "fail/server-error-cached"}}},
    // 7. Limits and what cannot be tested.
    {.name = "NeverAnswers",
     .flaw = "never-answers",
     .truth = "untestable",
     .flags = {"--timeout", "1s"},
     .exit_code = 3,
     .in_output = "never answered"},
    {.name = "AnswersLargerThanMaxAnswer",
     .flaw = "big-answer",
     .truth = "untestable",
     .flags = Flags({"--max-answer", "1KiB"}, kKeyedFast),
     .exit_code = 3,
     .in_output = "larger than the limit of 1024 bytes"},
    {.name = "AnswersWithinMaxAnswer",
     .flaw = "big-answer",
     .truth = "correct",
     .flags = kKeyedFast,
     .exit_code = 0,
     .verdicts = {{"replay", "pass/replay-marker"}}},
    {.name = "DeadlineBeforeRetention",
     .flaw = "correct",
     .truth = "untestable",
     .flags = {"--only", "replay,retention", "--replay-after", "5s", "--deadline", "1s"},
     .exit_code = 3,
     .verdicts = {{"retention", "not-applicable/deadline"}},
     .in_output = "\"stop_reason\":\"deadline\""},
};

INSTANTIATE_TEST_SUITE_P(Check, Zoo, ::testing::ValuesIn(kZoo),
                         [](const ::testing::TestParamInfo<ZooCase>& param) {
                           return param.param.name;
                         });

// https: the zoo's correct API behind TLS (a certificate of a test CA).
class ZooTls : public ::testing::Test {
 protected:
  ZooTls()
      : cert_(http::testing::MakeTestCertificate("IP:127.0.0.1")),
        api_("correct"),
        server_(
            [this](const http::testing::SeenRequest& seen) {
              ZooRequest req{.method = seen.method, .target = seen.target, .body = seen.body};
              req.headers = seen.headers;
              return http::testing::ScriptedReply{
                  .bytes = api_.Handle(req, [] { return false; }).bytes, .close = true};
            },
            &cert_) {}
  ~ZooTls() override { std::filesystem::remove_all(cert_.dir); }

  http::testing::TestCertificate cert_;
  ZooApi api_;
  http::testing::ScriptedServer server_;
};

TEST_F(ZooTls, ACorrectApiOverHttpsPassesWithCacert) {
  const ZooCase c{.name = "HttpsWithCacert",
                  .truth = "correct",
                  .flags = {"--cacert", cert_.ca_file, "--only", "replay,mismatch"},
                  .exit_code = 0,
                  .verdicts = {{"replay", "pass/replay-marker"}}};
  ExpectVerdicts(c, Check(c, server_.Url("/charges"), ""));
}

TEST_F(ZooTls, WithoutCacertItsCertificateIsRefusedAndNothingIsSent) {
  const ZooCase c{.name = "HttpsWithoutCacert", .truth = "untestable", .exit_code = 3};
  const RunResult run = Check(c, server_.Url("/charges"), "");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_THAT(run.output, HasSubstr("\"stop_reason\":\"unreachable\""));
  EXPECT_THAT(run.output, HasSubstr("certificate"));
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(ZooTls, PlainHttpToItsPortExits3NamingTls) {
  std::string url = server_.Url("/charges");
  url.replace(0, 5, "http");  // https:// -> http://
  const ZooCase c{.name = "HttpToTls", .truth = "untestable", .exit_code = 3};
  const auto start = std::chrono::steady_clock::now();
  const RunResult run = Check(c, url, "");
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_THAT(run.output, HasSubstr("\"stop_reason\":\"tls-on-http\""));
  EXPECT_THAT(run.output, HasSubstr("use https://"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

}  // namespace
}  // namespace idem::check_zoo
