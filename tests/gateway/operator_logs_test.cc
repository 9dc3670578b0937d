// Logs an operator can act on (issue 39): upstream failures (a 500, a timeout's 504, a refused
// connection's 502) at warning with the request id and the route, pass-through requests with the
// status sent, journald's <N> priority prefixes when JOURNAL_STREAM names stderr, and idem relay's
// --log-format / --log-level; the example relay.env's placeholder secret refused.
#include <sys/stat.h>

#include <boost/json/parse.hpp>
#include <cstdlib>
#include <sstream>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class OperatorLogsE2E : public GatewayFixture {
 protected:
  // The log's lines that are JSON objects whose message contains `text`.
  std::vector<boost::json::object> JsonLines(const std::string& log, const std::string& text) {
    std::vector<boost::json::object> found;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      boost::system::error_code ec;
      boost::json::value v = boost::json::parse(line, ec);
      EXPECT_TRUE(!ec && v.is_object()) << "not a JSON object: " << line;
      if (ec || !v.is_object()) continue;
      const boost::json::object& o = v.as_object();
      const boost::json::string* message =
          o.contains("message") ? o.at("message").if_string() : nullptr;
      if (message != nullptr && message->find(text) != std::string::npos) found.push_back(o);
    }
    return found;
  }
  std::vector<boost::json::object> RequestLines(const std::string& request_id) {
    std::vector<boost::json::object> found;
    for (boost::json::object& o : JsonLines(Log(), "")) {
      if (o.contains("request_id") && o.at("request_id").as_string() == request_id)
        found.push_back(std::move(o));
    }
    return found;
  }
  // Runs `argv` with `name`=`value` in its environment.
  RunResult RunWithEnv(const std::vector<std::string>& argv, const char* name, const char* value) {
    setenv(name, value, 1);
    RunResult run = RunToExit(argv, dir_);
    unsetenv(name);
    return run;
  }
};

TEST_F(OperatorLogsE2E, UpstreamFailuresAreWarningsWithRequestIdAndRoute) {
  StartGateway({"--log-format", "json", "--upstream-timeout", "1s", "--config",
                Config("[[route]]\npath_prefix = \"/charges\"\n")});
  ASSERT_EQ(Post("k500", kBody, {{"X-Charges-Status", "500"}, {"X-Request-Id", "r-500"}}).status,
            500);
  ASSERT_EQ(Post("k504", kBody, {{"X-Charges-Delay-Ms", "3000"}, {"X-Request-Id", "r-504"}}).status,
            504);
  // Without a key (optional): passed through unguarded, and the 500 with it.
  ASSERT_EQ(
      Send(port_, "POST", "/charges", {{"X-Charges-Status", "500"}, {"X-Request-Id", "r-p"}}, kBody)
          .status,
      500);
  // A request that succeeds is no warning (and, at the default level, no line).
  ASSERT_EQ(Post("k201", kBody, {{"X-Request-Id", "r-201"}}).status, 201);
  struct Want {
    const char* id;
    int status;
    const char* decision;
    const char* route;  // nullptr: none
  };
  for (const Want& w : {Want{"r-500", 500, "transient", "/charges"},
                        Want{"r-504", 504, "upstream_error", "/charges"},
                        Want{"r-p", 500, "pass_through", nullptr}}) {
    ASSERT_TRUE(Eventually([&] { return RequestLines(w.id).size() == 1; })) << w.id << Log();
    const boost::json::object line = RequestLines(w.id).front();
    EXPECT_EQ(line.at("level").as_string(), "warning") << w.id;
    EXPECT_EQ(line.at("status").as_int64(), w.status) << w.id;
    EXPECT_EQ(line.at("decision").as_string(), w.decision) << w.id;
    if (w.route != nullptr)
      EXPECT_EQ(line.at("route").as_string(), w.route) << w.id;
    else
      EXPECT_TRUE(line.at("route").is_null()) << w.id;
  }
  EXPECT_TRUE(RequestLines("r-201").empty()) << Log();

  // The upstream gone: connections refused, 502.
  StartGateway(
      {"--log-format", "json", "--config", Config("[[route]]\npath_prefix = \"/charges\"\n")},
      "http://127.0.0.1:" + std::to_string(FreePort()));
  ASSERT_EQ(Post("k502", kBody, {{"X-Request-Id", "r-502"}}).status, 502);
  ASSERT_TRUE(Eventually([&] { return RequestLines("r-502").size() == 1; })) << Log();
  EXPECT_EQ(RequestLines("r-502").front().at("level").as_string(), "warning");
  EXPECT_EQ(RequestLines("r-502").front().at("route").as_string(), "/charges");
}

TEST_F(OperatorLogsE2E, PassThroughIsLoggedWithTheStatusSent) {
  StartGateway({"--log-format", "json", "--log-level", "debug"});
  ASSERT_EQ(Send(port_, "GET", "/stats", {{"X-Request-Id", "get-1"}}).status, 200);
  ASSERT_TRUE(Eventually([&] { return RequestLines("get-1").size() == 1; })) << Log();
  const boost::json::object line = RequestLines("get-1").front();
  EXPECT_EQ(line.at("decision").as_string(), "pass_through");
  EXPECT_EQ(line.at("status").as_int64(), 200);
  EXPECT_EQ(line.at("level").as_string(), "debug");
}

TEST_F(OperatorLogsE2E, UnderJournaldEachLineStartsWithItsPriority) {
  // JOURNAL_STREAM names the log file's device and inode: the file is stderr's, as the journal's
  // stream would be.
  const std::string log = dir_ + "/idem.log";
  WriteFile(log, "");
  struct stat st {};
  ASSERT_EQ(stat(log.c_str(), &st), 0);
  setenv("JOURNAL_STREAM", (std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino)).c_str(),
         1);
  StartGateway({"--log-level", "warn"});
  unsetenv("JOURNAL_STREAM");
  ASSERT_EQ(Post("kj", kBody, {{"X-Charges-Status", "500"}, {"X-Request-Id", "r-j"}}).status, 500);
  ASSERT_TRUE(Eventually([&] {
    return Log().find("r-j POST /charges -> 500") != std::string::npos;
  })) << Log();
  gateway_->Signal(SIGTERM);
  ASSERT_EQ(gateway_->Wait(std::chrono::seconds(30)), 0);
  std::istringstream lines(Log());
  int warnings = 0;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_EQ(line.front(), '<') << line;
    if (line.rfind("<4>", 0) == 0 &&
        line.find(" warning r-j POST /charges -> 500 transient") != std::string::npos)
      ++warnings;
  }
  EXPECT_EQ(warnings, 1) << Log();

  // With JOURNAL_STREAM naming another file (stderr is not the journal's): no prefix.
  const size_t before = Log().size();
  setenv("JOURNAL_STREAM", "1:1", 1);
  StartGateway({"--log-level", "info"});
  unsetenv("JOURNAL_STREAM");
  gateway_->Signal(SIGTERM);
  ASSERT_EQ(gateway_->Wait(std::chrono::seconds(30)), 0);
  const std::string second = Log().substr(before);
  EXPECT_NE(second.find(" info idem serve: listening on"), std::string::npos) << second;
  EXPECT_EQ(second.find('<'), std::string::npos) << second;
}

TEST_F(OperatorLogsE2E, RelayTakesTheSameLoggingFlags) {
  StartGateway();  // creates the store
  const std::vector<std::string> relay = {
      IDEM_BINARY, "relay",
      "--store",   store_,
      "--sink",    "http",
      "--url",     "http://127.0.0.1:" + std::to_string(FreePort()) + "/hooks",
      "--secret",  "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
      "--once"};
  std::vector<std::string> json = relay;
  json.insert(json.end(), {"--log-format", "json", "--log-level", "warning"});
  RunResult quiet = RunToExit(json, dir_);
  EXPECT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_EQ(quiet.output, "") << "nothing at warning or above";
  json.back() = "info";
  RunResult run = RunToExit(json, dir_);
  EXPECT_EQ(run.exit_code, 0) << run.output;
  const std::vector<boost::json::object> started =
      JsonLines(run.output, "idem relay: publishing the outbox of ");
  ASSERT_EQ(started.size(), 1u) << run.output;
  EXPECT_EQ(started.front().at("level").as_string(), "info");
  EXPECT_EQ(JsonLines(run.output, "idem relay: sent 0, retried 0, dead 0").size(), 1u)
      << run.output;
  std::vector<std::string> bad = relay;
  bad.insert(bad.end(), {"--log-level", "loud"});
  RunResult refused = RunToExit(bad, dir_);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("log level 'loud' is not known"), std::string::npos)
      << refused.output;
}

TEST_F(OperatorLogsE2E, RelayRefusesTheExampleEnvFilesPlaceholderSecret) {
  StartGateway();  // creates the store
  const std::string env = ReadFile(IDEM_SOURCE_DIR "/packaging/examples/relay.env");
  ASSERT_NE(env.find("\nIDEM_WEBHOOK_SECRET=whsec_REPLACE_ME\n"), std::string::npos) << env;
  const RunResult run =
      RunWithEnv({IDEM_BINARY, "relay", "--store", store_, "--sink", "http", "--url",
                  "http://127.0.0.1:" + std::to_string(FreePort()) + "/hooks", "--once"},
                 "IDEM_WEBHOOK_SECRET", "whsec_REPLACE_ME");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_EQ(run.output.rfind("idem relay: IDEM_WEBHOOK_SECRET is whsec_REPLACE_ME, the example's "
                             "placeholder, not a secret",
                             0),
            0u)
      << run.output;
  EXPECT_NE(run.output.find("openssl rand -base64 32"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace idem::e2e
