// End-to-end tests of `idem check URL` (docs/idem-check.md): the real idem binary against idem
// serve (SQLite) in front of examples/charges, against charges alone (not idempotent), and
// against scripted servers that break one promise each.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <strings.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/json.hpp>
#pragma GCC diagnostic pop

#include "e2e_support.h"
#include "scripted_upstream.h"

namespace idem::e2e {
namespace {

namespace json = boost::json;
using ::testing::HasSubstr;

const std::string kBody = R"({"amount":4200,"currency":"eur"})";

// The value of the Idempotency-Key header in a request head, "" when absent.
std::string KeyOf(const std::string& head) {
  for (size_t at = head.find("\r\n"); at != std::string::npos; at = head.find("\r\n", at + 2)) {
    if (strncasecmp(head.c_str() + at + 2, "idempotency-key:", 16) == 0) {
      const size_t end = head.find("\r\n", at + 2);
      std::string value = head.substr(at + 18, end - at - 18);
      value.erase(0, value.find_first_not_of(' '));
      return value;
    }
  }
  return "";
}

class CheckE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/idem-check-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    charges_port_ = FreePort();
    charges_ = std::make_unique<Child>(
        std::vector<std::string>{CHARGES_BINARY, "--listen",
                                 "127.0.0.1:" + std::to_string(charges_port_)},
        dir_ + "/charges.log");
    ASSERT_TRUE(Eventually([&] { return Send(charges_port_, "GET", "/stats").status == 200; }));
  }

  void TearDown() override {
    gateway_.reset();
    charges_.reset();
    if (HasFailure()) std::cerr << "idem serve log:\n" << ReadFile(dir_ + "/idem.log") << "\n";
    std::filesystem::remove_all(dir_);
  }

  // Starts idem serve on SQLite in front of charges; returns its URL for /charges.
  std::string StartGateway() {
    const int port = FreePort(), admin = FreePort();
    gateway_ = std::make_unique<Child>(
        std::vector<std::string>{IDEM_BINARY, "serve", "--listen",
                                 "127.0.0.1:" + std::to_string(port), "--upstream", ChargesUrl(""),
                                 "--store", "sqlite:" + dir_ + "/idem.db", "--admin",
                                 "127.0.0.1:" + std::to_string(admin)},
        dir_ + "/idem.log");
    EXPECT_TRUE(Eventually([&] { return Send(admin, "GET", "/healthz").status == 200; }));
    return "http://127.0.0.1:" + std::to_string(port) + "/charges";
  }

  std::string ChargesUrl(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(charges_port_) + path;
  }
  long ChargesStat(const std::string& field) {
    return JsonNumber(Send(charges_port_, "GET", "/stats").body, field);
  }

  // Runs `idem check URL -d kBody -H 'Content-Type: application/json' EXTRA...` (2 minutes at
  // most); stdout and stderr together.
  RunResult Check(const std::string& url, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {
        IDEM_BINARY, "check", url, "-d", kBody, "-H", "Content-Type: application/json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunToExit(argv, dir_, std::chrono::minutes(2));
  }
  std::vector<std::string> Counted() const {
    return {"--count-url", ChargesUrl("/stats"), "--count-pointer", "/charges"};
  }

  // The --json object in `output`.
  static json::object Report(const RunResult& run) {
    const size_t at = run.output.find("{\"method\"");
    EXPECT_NE(at, std::string::npos) << run.output;
    if (at == std::string::npos) return {};
    return json::parse(run.output.substr(at, run.output.find('\n', at) - at)).as_object();
  }
  // Scenario `name`'s entry of round 1.
  static json::object Scenario(const json::object& report, const std::string& name) {
    for (const json::value& s : report.at("scenarios").as_array()) {
      if (s.at("name") == name.c_str() && s.at("round") == 1) return s.as_object();
    }
    ADD_FAILURE() << "no scenario " << name;
    return {};
  }
  static std::string Why(const json::object& report, const std::string& name) {
    return std::string(Scenario(report, name).at("why").as_string());
  }

  std::string dir_;
  int charges_port_ = 0;
  std::unique_ptr<Child> charges_, gateway_;
};

TEST_F(CheckE2E, EveryScenarioPassesAgainstIdemServeInFrontOfCharges) {
  const std::string url = StartGateway();
  std::vector<std::string> extra = Counted();
  for (const char* flag : {"--json", "--replay-after", "1s"}) extra.push_back(flag);
  const RunResult run = Check(url, extra);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const json::object report = Report(run);
  for (const char* name : {"replay", "mismatch", "concurrent", "lost-answer", "retention"}) {
    const json::object s = Scenario(report, name);
    EXPECT_EQ(s.at("result"), "pass") << name << ": " << s.at("why");
    EXPECT_EQ(s.at("reason"), "replay-marker") << name << ": " << s.at("why");
    // concurrent: 20 bursts (the default), each with a key of its own.
    EXPECT_EQ(s.at("effects"), std::string(name) == "concurrent" ? 20 : 1) << name;
  }
  EXPECT_EQ(Scenario(report, "no-key").at("result"), "reported");
  EXPECT_EQ(Scenario(report, "bad-key").at("result"), "reported");
  EXPECT_THAT(Why(report, "replay"), HasSubstr("Idempotent-Replayed: true"));
  EXPECT_THAT(Why(report, "mismatch"), HasSubstr("refused with 422"));
  EXPECT_THAT(Why(report, "bad-key"), HasSubstr("every malformed key was refused"));
  // idem serve without --require-key passes a request without a key through: it runs.
  EXPECT_THAT(Why(report, "no-key"), HasSubstr("answered 201"));
  EXPECT_EQ(Scenario(report, "no-key").at("effects"), 1);
  EXPECT_EQ(report.at("passed"), 5);
  EXPECT_EQ(report.at("reported"), 2);
  EXPECT_EQ(report.at("inconclusive"), 0);
  EXPECT_EQ(report.at("exit_code"), 0);
  EXPECT_TRUE(report.at("stop_reason").is_null());
  EXPECT_EQ(report.at("reasons").at("no-key"), "reported");
}

TEST_F(CheckE2E, TheTableShowsARowPerScenarioAndASummaryOverRounds) {
  const std::string url = StartGateway();
  std::vector<std::string> extra = Counted();
  for (const char* flag :
       {"--rounds", "2", "--only", "replay,concurrent,no-key", "--bursts", "2"}) {
    extra.push_back(flag);
  }
  const RunResult run = Check(url, extra);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("idem check POST " + url +
                                    ": 2 rounds, 8 at once in 2 bursts, effects "
                                    "counted by GET " +
                                    ChargesUrl("/stats") + " at /charges"));
  EXPECT_THAT(run.output, HasSubstr("replay       pass            2 of 2 rounds: "));
  EXPECT_THAT(run.output, HasSubstr("concurrent   pass            2 of 2 rounds: 2 bursts, each "
                                    "with a new key: all 8 requests with one key hold one answer "
                                    "(201)"));
  EXPECT_THAT(run.output, HasSubstr("no-key       reported        2 of 2 rounds: "));
  EXPECT_THAT(run.output, HasSubstr("summary: 2 passed, 0 failed, 0 not applicable, 1 reported"));
  EXPECT_EQ(run.output.find("mismatch"), std::string::npos);
  // One per key (replay 1, concurrent 2 bursts) and round, and no-key's.
  EXPECT_EQ(ChargesStat("charges"), 2 * (1 + 2 + 1));
}

TEST_F(CheckE2E, ReplayConcurrentAndLostAnswerFailAgainstChargesAloneNamingTheDoubleEffects) {
  std::vector<std::string> extra = Counted();
  for (const char* flag : {"--json", "--replay-after", "1s"}) extra.push_back(flag);
  const RunResult run = Check(ChargesUrl("/charges"), extra);
  ASSERT_EQ(run.exit_code, 1) << run.output;
  const json::object report = Report(run);
  EXPECT_EQ(Scenario(report, "replay").at("result"), "fail");
  EXPECT_THAT(Why(report, "replay"), HasSubstr("has another body"));
  EXPECT_THAT(Why(report, "replay"), HasSubstr("2 effects for one key (expected 1)"));
  EXPECT_EQ(Scenario(report, "concurrent").at("result"), "fail");
  EXPECT_THAT(Why(report, "concurrent"), HasSubstr("8 requests with one key got 8 different"));
  EXPECT_THAT(Why(report, "concurrent"), HasSubstr("8 effects for one key (expected 1)"));
  EXPECT_EQ(Scenario(report, "lost-answer").at("result"), "fail");
  EXPECT_THAT(Why(report, "lost-answer"), HasSubstr("3 effects for one key (expected 1)"));
  EXPECT_EQ(Scenario(report, "mismatch").at("result"), "fail");
  EXPECT_THAT(Why(report, "mismatch"), HasSubstr("was answered 201"));
  EXPECT_EQ(Scenario(report, "retention").at("reason"), "key-forgotten");
  EXPECT_EQ(report.at("reasons").at("replay"), "other-answer");
  EXPECT_EQ(report.at("reasons").at("concurrent"), "several-answers");
  // Bounded: replay 2, mismatch 2 (it stops at the body that was not refused), concurrent 8
  // (it stops at the first burst that failed), lost-answer 3, retention 2, no-key 1, bad-key 4
  // POSTs: no request sent twice by the tool.
  EXPECT_EQ(ChargesStat("calls"), 22);
  EXPECT_EQ(report.at("failed"), 5);
}

TEST_F(CheckE2E, AServerThatReplaysAnotherBodyFailsReplay) {
  std::mutex mu;
  std::map<std::string, int> seen;
  ScriptedUpstream server([&](const std::string& head) {
    std::lock_guard lock(mu);
    const int n = ++seen[KeyOf(head)];
    return ScriptedUpstream::Reply{ScriptedUpstream::Answer(
        "201 Created", "{\"id\":\"ch_1\",\"served_at\":" + std::to_string(n) + "}",
        n > 1 ? "Content-Type: application/json\r\nIdempotent-Replayed: true\r\n"
              : "Content-Type: application/json\r\n")};
  });
  const RunResult run = Check(server.Url() + "/charges", {"--only", "replay", "--json"});
  ASSERT_EQ(run.exit_code, 1) << run.output;
  const json::object report = Report(run);
  EXPECT_EQ(Scenario(report, "replay").at("result"), "fail");
  EXPECT_THAT(Why(report, "replay"),
              HasSubstr("the same key and body sent again has another body"));
  EXPECT_THAT(Why(report, "replay"), HasSubstr("\"served_at\":2"));
  EXPECT_TRUE(report.at("effects_counted") == false);
  EXPECT_EQ(server.requests(), 2);
}

TEST_F(CheckE2E, AServerThatAnswersAnotherBodyUnderAUsedKeyFailsMismatch) {
  std::mutex mu;
  std::map<std::string, std::string> answers;  // by key; the body is never looked at
  ScriptedUpstream server([&](const std::string& head) {
    std::lock_guard lock(mu);
    const std::string key = KeyOf(head);
    auto [it, fresh] =
        answers.emplace(key, "{\"id\":\"ch_" + std::to_string(answers.size() + 1) + "\"}");
    return ScriptedUpstream::Reply{ScriptedUpstream::Answer(
        "201 Created", it->second, fresh ? "" : "Idempotent-Replayed: true\r\n")};
  });
  const RunResult run = Check(server.Url() + "/charges", {"--only", "replay,mismatch", "--json"});
  ASSERT_EQ(run.exit_code, 1) << run.output;
  const json::object report = Report(run);
  EXPECT_EQ(Scenario(report, "replay").at("result"), "pass") << Why(report, "replay");
  EXPECT_EQ(Scenario(report, "mismatch").at("result"), "fail");
  EXPECT_THAT(Why(report, "mismatch"),
              HasSubstr("the same key with another body (field \"amount\" changed (4200 -> "
                        "4201)) got the first answer (201); it must be refused with a 4xx"));
}

TEST_F(CheckE2E, A409ThatNeverEndsIsResentABoundedNumberOfTimes) {
  ScriptedUpstream server([](const std::string&) {
    return ScriptedUpstream::Reply{ScriptedUpstream::Answer(
        "409 Conflict", "{\"error\":\"in flight\"}", "Retry-After: 0\r\n")};
  });
  const auto start = std::chrono::steady_clock::now();
  const RunResult run = Check(server.Url() + "/charges", {"--only", "replay", "--json"});
  ASSERT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(Why(Report(run), "replay"),
              HasSubstr("was answered 409 (in flight) and still was after every retry"));
  EXPECT_EQ(server.requests(), 1 + 10);  // the first, then at most 10 re-sends
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(60));
}

TEST_F(CheckE2E, ARequestThatIsNeverAnsweredEndsTheRunAtTheTimeoutWithExit3) {
  ScriptedUpstream server([](const std::string&) {
    std::this_thread::sleep_for(std::chrono::seconds(4));  // the answer comes too late
    return ScriptedUpstream::Reply{ScriptedUpstream::Answer("201 Created", "{}")};
  });
  const RunResult run =
      Check(server.Url() + "/charges", {"--only", "replay", "--timeout", "500ms", "--json"});
  ASSERT_EQ(run.exit_code, 3) << run.output;
  EXPECT_EQ(Report(run).at("stop_reason"), "no-answer");
  EXPECT_THAT(std::string(Report(run).at("stopped").as_string()),
              HasSubstr("accepted the connection but never answered"));
  const json::object replay = Scenario(Report(run), "replay");
  EXPECT_THAT(std::string(replay.at("why").as_string()),
              HasSubstr("the first request with a fresh key got no answer"));
  EXPECT_EQ(replay.at("exchanges").as_array().size(), 1u);
  EXPECT_LE(replay.at("elapsed_ms").as_int64(), 3000);
  EXPECT_EQ(server.requests(), 1);
}

TEST_F(CheckE2E, AnUnreachableUrlExits3AndSendsNothing) {
  const std::string url = "http://127.0.0.1:" + std::to_string(FreePort()) + "/charges";
  const RunResult run = Check(url);
  EXPECT_EQ(run.exit_code, 3) << run.output;
  EXPECT_THAT(run.output, HasSubstr("stopped: cannot reach " + url));
  const RunResult json_run = Check(url, {"--json"});
  EXPECT_EQ(json_run.exit_code, 3) << json_run.output;
  EXPECT_EQ(Report(json_run).at("stop_reason"), "unreachable");
}

TEST_F(CheckE2E, ACountUrlThatGivesNoCountIsAUsageErrorBeforeAnyRequest) {
  const RunResult run = Check(ChargesUrl("/charges"), {"--count-url", ChargesUrl("/stats")});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_THAT(run.output, HasSubstr("--count-url gives no count"));
  EXPECT_THAT(run.output, HasSubstr("give --count-pointer"));
  EXPECT_EQ(ChargesStat("calls"), 0);
}

TEST_F(CheckE2E, BadFlagsAreUsageErrors) {
  const std::string url = ChargesUrl("/charges");
  for (const std::vector<std::string>& flags : std::vector<std::vector<std::string>>{
           {"--concurrency", "1"},
           {"--rounds", "0"},
           {"--only", "replay,lost"},
           {"--timeout", "0"},
           {"--timeout", "soon"},
           {"--count-pointer", "/charges"},
           {"--count-url", ChargesUrl("/stats"), "--count-pointer", "charges"},
           {"--count-url", "ftp://127.0.0.1/stats"},
           {"--key-header", "Bad Name"},
           {"-H", "idempotency-key: \"mine\""},
           {"--bursts", "0"},
           {"--replay-after", "soon"},
           {"--only", "retention", "--replay-after", "0"},
           {"--deadline", "0"},
           {"--key-format", "quoted"},
           {"--max-answer", "0"},
           {"--cacert", "/nonexistent/ca.pem"},
           {"--bogus"}}) {
    const RunResult run = Check(url, flags);
    EXPECT_EQ(run.exit_code, 2) << flags[0] << ": " << run.output;
    EXPECT_THAT(run.output, HasSubstr("idem")) << flags[0];
  }
  EXPECT_EQ(ChargesStat("calls"), 0);
}

TEST_F(CheckE2E, TheManPageAndTheBashCompletionKnowTheCommand) {
  // The page is built compressed (gzip -9n), as Debian installs it.
  const std::string gz = std::string(IDEM_MAN_DIR) + "/idem-check.1.gz";
  const RunResult page = RunToExit({"/bin/sh", "-c", "gzip -dc " + gz}, dir_);
  ASSERT_EQ(page.exit_code, 0) << page.output;
  EXPECT_THAT(page.output, HasSubstr(".TH IDEM"));
  EXPECT_THAT(page.output, HasSubstr("count\\-pointer"));
  EXPECT_THAT(page.output, HasSubstr("replay\\-after"));
  const RunResult made = RunToExit({IDEM_BINARY, "completion", "bash"}, dir_);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  WriteFile(dir_ + "/idem.bash", made.output);
  const std::string probe =
      "bash -c 'source " + dir_ + "/idem.bash" +
      " && COMP_WORDS=(idem che) && COMP_CWORD=1 && _idem && echo \"${COMPREPLY[*]}\" && "
      "COMP_WORDS=(idem check --count-) && COMP_CWORD=2 && _idem && echo \"${COMPREPLY[*]}\"'";
  FILE* pipe = popen(probe.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string out;
  char buffer[256];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  EXPECT_EQ(pclose(pipe), 0);
  EXPECT_EQ(out, "check\n--count-url --count-pointer\n");
}

}  // namespace
}  // namespace idem::e2e
