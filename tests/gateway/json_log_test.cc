// idem serve --log-format json (issue 26, item 4): every line of its log is one JSON object
// (time, level, message; a request's line also its request id, route, decision, status and the
// key's hash), and no line carries a key in clear, whatever the gateway had to say about it.
#include <boost/json/parse.hpp>
#include <csignal>
#include <sstream>
#include <thread>

#include "gateway_fixture.h"
#include "idem/fingerprint.h"

namespace idem::e2e {
namespace {

class JsonLogE2E : public GatewayFixture {
 protected:
  // The log's lines, each parsed; a line that is not a JSON object fails the test.
  std::vector<boost::json::object> Lines() {
    std::vector<boost::json::object> lines;
    std::istringstream log(Log());
    for (std::string line; std::getline(log, line);) {
      boost::system::error_code ec;
      boost::json::value v = boost::json::parse(line, ec);
      EXPECT_TRUE(!ec && v.is_object()) << "not a JSON object: " << line;
      if (!ec && v.is_object()) lines.push_back(v.as_object());
    }
    return lines;
  }
};

TEST_F(JsonLogE2E, EveryLineIsAJsonObjectAndNoKeyIsInClear) {
  StartGateway({"--log-format", "json", "--log-level", "debug", "--config",
                Config("drain_timeout = \"1s\"\n[[route]]\npath_prefix = \"/charges\"\n")});
  const std::string key = "json-log-secret-key-4711";
  ASSERT_EQ(Post(key).status, 201);
  ASSERT_EQ(Post(key).status, 201);  // replayed
  // A transient upstream answer: the key is released, and that is logged with the key.
  ASSERT_EQ(Post(key + "-503", kBody, {{"X-Charges-Status", "503"}}).status, 503);
  ASSERT_EQ(Send(port_, "GET", "/stats", {{"X-Request-Id", "get-1"}}).status / 100, 2);
  // A request still upstream when the drain ends: the gateway names its key in a warning.
  const std::string held = "json-log-held-key-0815";
  std::thread client([&] { Post(held, kBody, {{"X-Charges-Hold", "json"}}); });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  gateway_->Signal(SIGTERM);
  const int exit_code = gateway_->Wait(std::chrono::seconds(30));
  Send(charges_port_, "POST", "/release/json");
  client.join();
  ASSERT_EQ(exit_code, 0);

  EXPECT_EQ(Log().find(key), std::string::npos) << Log();
  EXPECT_EQ(Log().find(held), std::string::npos) << Log();
  bool held_named = false;
  for (const boost::json::object& o : Lines()) {
    const boost::json::string* message =
        o.contains("message") ? o.at("message").if_string() : nullptr;
    if (message != nullptr && o.at("level").as_string() == "warning" &&
        message->find("sha256:" + Sha256Hex(held).substr(0, 16)) != std::string::npos)
      held_named = true;
  }
  EXPECT_TRUE(held_named) << Log();
  const std::vector<boost::json::object> lines = Lines();
  ASSERT_FALSE(lines.empty());
  int executed = 0, replayed = 0, passed = 0;
  for (const boost::json::object& o : lines) {
    ASSERT_TRUE(o.contains("time") && o.at("time").is_string()) << o;
    ASSERT_TRUE(o.contains("level") && o.at("level").is_string()) << o;
    ASSERT_TRUE(o.contains("message") && o.at("message").is_string()) << o;
    if (!o.contains("decision")) continue;
    EXPECT_TRUE(o.at("request_id").is_string()) << o;
    EXPECT_TRUE(o.at("status").is_int64()) << o;
    const std::string decision(o.at("decision").as_string());
    if (decision == "executed" || decision == "replayed") {
      EXPECT_EQ(o.at("route").as_string(), "/charges") << o;
      EXPECT_EQ(o.at("key_sha256").as_string(), Sha256Hex(key).substr(0, 16)) << o;
      EXPECT_EQ(o.at("status").as_int64(), 201) << o;
      (decision == "executed" ? executed : replayed)++;
    }
    if (decision == "pass_through") {
      EXPECT_EQ(o.at("request_id").as_string(), "get-1") << o;
      EXPECT_TRUE(o.at("route").is_null()) << o;
      EXPECT_FALSE(o.contains("key_sha256")) << o;
      ++passed;
    }
  }
  EXPECT_EQ(executed, 1);
  EXPECT_EQ(replayed, 1);
  EXPECT_EQ(passed, 1);
}

// The completer's lines (issue 37, item 8): a gateway on JSON logs recovers a killed gateway's
// keys (a resend that completes, a status ask that releases, a resend that backs off and then
// gives up), and names each key only by its hash.
class JsonLogRecoveryE2E : public JsonLogE2E {
 protected:
  JsonLogRecoveryE2E() { charges_flags_ = {"--dedupe-keys"}; }
};

TEST_F(JsonLogRecoveryE2E, CompleterLinesNameKeysOnlyByHash) {
  const std::string config = Config(R"(
lease = "2s"
upstream_timeout = "1s"
recover_interval = "500ms"
recover_attempts = 2

[[route]]
path_prefix = "/charges"
recover = "resend"

[[route]]
path_prefix = "/pay"
recover = "status"
status_url = "/charges/by-key/{key}"
)");
  StartGateway({"--config", config});
  const int port = FreePort(), admin = FreePort();
  const std::string log = dir_ + "/idem-json.log";
  std::unique_ptr<Child> b =
      Spawn(port, admin, {"--config", config, "--log-format", "json"}, Upstream(), log);
  ASSERT_TRUE(b->Running()) << ReadFile(log);

  const std::string resent = "json-recover-resent-key-1", released = "json-recover-released-key-2",
                    poison = "json-recover-poison-key-3";
  std::vector<std::thread> clients;
  clients.emplace_back([&] { Post(resent, kBody, {{"X-Charges-Delay-Ms", "600"}}); });
  clients.emplace_back([&] {
    Post(released, kBody, {{"X-Charges-Delay-Ms", "600"}, {"X-Charges-Status", "503"}}, "/pay");
  });
  clients.emplace_back([&] {
    Post(poison, kBody, {{"X-Charges-Delay-Ms", "300"}, {"X-Charges-Status", "503"}});
  });
  ASSERT_TRUE(Eventually([&] { return Stat("calls") == 3; }));
  gateway_->Signal(SIGKILL);
  ASSERT_EQ(gateway_->Wait(std::chrono::seconds(10)), 128 + SIGKILL);
  for (std::thread& t : clients) t.join();
  for (const char* result : {"completed", "released", "exhausted"}) {
    const std::string name = std::string("idem_recovered_keys_total{result=\"") + result + "\"}";
    EXPECT_TRUE(Eventually(
        [&] { return MetricValue(Send(admin, "GET", "/metrics").body, name) == 1; }))
        << name;
  }
  b->Signal(SIGTERM);
  ASSERT_EQ(b->Wait(std::chrono::seconds(30)), 0);

  const std::string text = ReadFile(log);
  int recovering = 0, recovered = 0, backoff = 0, gave_up = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    for (const std::string& key : {resent, released, poison}) {
      EXPECT_EQ(line.find(key), std::string::npos) << line;
      const std::string hashed = "key sha256:" + Sha256Hex(key).substr(0, 16);
      if (line.find(hashed) == std::string::npos) continue;
      if (line.find("recovering " + hashed) != std::string::npos) ++recovering;
      if (line.find("recovered " + hashed) != std::string::npos) ++recovered;
      if (line.find("asking again") != std::string::npos) ++backoff;
      if (line.find("gave up") != std::string::npos) ++gave_up;
    }
  }
  EXPECT_EQ(recovering, 4) << text;  // the resend, the ask, and the poison's two attempts
  EXPECT_EQ(recovered, 2) << text;
  EXPECT_EQ(backoff, 1) << text;
  EXPECT_EQ(gave_up, 1) << text;
}

}  // namespace
}  // namespace idem::e2e
