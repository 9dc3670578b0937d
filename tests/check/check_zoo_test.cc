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
#include "zoo_cases.h"

namespace idem::check_zoo {
namespace {

namespace json = boost::json;
using e2e::RunResult;
using ::testing::HasSubstr;

const std::string kBody = R"({"amount":4200,"currency":"eur"})";

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
  std::vector<std::string> argv = {
      IDEM_BINARY, "check", url, "-d", kBody, "-H", "Content-Type: application/json", "--json"};
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
      EXPECT_EQ(report.at("reasons").at(name), want.substr(slash + 1).c_str()) << name << ":\n"
                                                                               << run.output;
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

INSTANTIATE_TEST_SUITE_P(Check, Zoo, ::testing::ValuesIn(ZooCases()),
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
