// End-to-end: routes from the config file (docs/gateway.md "Config file"): the key from another
// header (webhook-id) or from a JSON pointer in the body, replay_headers, final and transient
// statuses, a key required on one route only; and a bad config file refused at start with the
// file, line and what is wrong (exit 2).
#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(ConfigRoutesE2E) : public GatewayFixture {
 protected:
  void StartWithRoutes() {
    StartGateway({"--config", Config(R"(
[[route]]
methods = ["POST"]
path_prefix = "/webhooks"
key = "required"
key_header = "webhook-id"
replay_headers = ["X-Charge-Id"]

[[route]]
path_prefix = "/events"
key_pointer = "/id"

[[route]]
path_prefix = "/strict"
key = "required"
final_statuses = [409]
transient_statuses = [402]

[[route]]
path_prefix = "/loose"
)")});
  }

  Response Webhook(const std::string& id) {
    return Send(port_, "POST", "/webhooks/stripe", {{"webhook-id", id}}, kBody);
  }
  Response Event(const std::string& body, const std::string& target = "/events") {
    return Send(port_, "POST", target, {{"Content-Type", "application/json"}}, body);
  }
};
#define ConfigRoutesE2E E2E_SUITE(ConfigRoutesE2E)

TEST_F(ConfigRoutesE2E, KeyFromWebhookIdHeaderIsRequiredAndReplaysConfiguredHeaders) {
  StartWithRoutes();
  ExpectProblem(Send(port_, "POST", "/webhooks/stripe", {{"Idempotency-Key", "k"}}, kBody), 400);
  const Response first = Webhook("msg_1");
  ASSERT_EQ(first.status, 201) << first.body;
  const Response retry = Webhook("msg_1");
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(retry.body, first.body);
  EXPECT_EQ(retry.Header("X-Charge-Id"), first.Header("X-Charge-Id"));
  EXPECT_FALSE(first.Header("X-Charge-Id").empty());
  EXPECT_EQ(Stat("calls"), 1);
  // The default route replays Content-Type and Location only.
  ASSERT_EQ(Post("order-1", kBody, {}, "/loose").status, 201);
  const Response loose = Post("order-1", kBody, {}, "/loose");
  EXPECT_EQ(loose.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(loose.HeaderCount("X-Charge-Id"), 0);
  EXPECT_FALSE(loose.Header("Location").empty());
}

TEST_F(ConfigRoutesE2E, KeyFromJsonPointerInTheBody) {
  StartWithRoutes();
  ASSERT_EQ(Event(R"({"id":"evt_1","amount":1})").status, 201);
  // Same key, same canonical body: a replay; same key, another body: 422.
  EXPECT_EQ(Event(R"({ "amount" : 1, "id" : "evt_1" })").Header("Idempotent-Replayed"), "true");
  ExpectProblem(Event(R"({"id":"evt_1","amount":2})"), 422);
  // No key at the pointer (optional route): passes through unguarded, every time.
  EXPECT_EQ(Event(R"({"amount":3})").status, 201);
  EXPECT_EQ(Event(R"({"amount":3})").HeaderCount("Idempotent-Replayed"), 0);
  // A key that is not a string is refused.
  ExpectProblem(Event(R"({"id":17})"), 400);
  EXPECT_EQ(Stat("calls"), 3);
}

TEST_F(ConfigRoutesE2E, FinalAndTransientStatusesAndKeyRequiredPerRoute) {
  StartWithRoutes();
  ExpectProblem(Send(port_, "POST", "/strict", {}, kBody), 400);    // this route requires a key
  EXPECT_EQ(Send(port_, "POST", "/loose", {}, kBody).status, 201);  // this one does not
  // 409 is transient by default; this route stores it.
  ASSERT_EQ(Post("k409", kBody, {{"X-Charges-Status", "409"}}, "/strict").status, 409);
  const Response stored = Post("k409", kBody, {}, "/strict");
  EXPECT_EQ(stored.status, 409);
  EXPECT_EQ(stored.Header("Idempotent-Replayed"), "true");
  // 402 is final by default; this route never stores it, so the retry runs.
  ASSERT_EQ(Post("k402", kBody, {{"X-Charges-Status", "402"}}, "/strict").status, 402);
  const Response rerun = Post("k402", kBody, {}, "/strict");
  EXPECT_EQ(rerun.status, 201);
  EXPECT_EQ(rerun.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 4);
}

// Starts idem serve with `toml` as its config file; expects exit 2 and `message` in its output.
class E2E_SUITE(BadConfigE2E) : public GatewayFixture {
 protected:
  void ExpectRefused(const std::string& toml, const std::string& message) {
    const std::string path = Config(toml, "bad.toml");
    const RunResult run = RunToExit({IDEM_BINARY, "serve", "--listen", "127.0.0.1:0", "--upstream",
                                     Upstream(), "--store", store_, "--config", path},
                                    dir_);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_NE(run.output.find(path + message), std::string::npos)
        << "want '" << path << message << "' in:\n"
        << run.output;
  }
};
#define BadConfigE2E E2E_SUITE(BadConfigE2E)

TEST_F(BadConfigE2E, RefusedAtStartWithFileLineAndWhatIsWrong) {
  ExpectRefused("lease = \"30s\"\nleese = \"5s\"\n", ":2:1: unknown setting 'leese'");
  ExpectRefused("lease = \"thirty\"\n", ":1:9: lease: ");
  ExpectRefused("[[route]]\npath_prefix = \"/a\"\nin_flight = \"queue\"\n",
                ":3:13: in_flight must be");
  ExpectRefused("[[route]]\nfinal_statuses = [200, 700]\n", ":2:24: final_statuses");
  ExpectRefused("lease = \"30s\"\n[[route]\n", ":2:");
  // Settings that only make sense together still name the file and the route's line.
  ExpectRefused("\n[[route]]\npath_prefix = \"webhooks\"\n",
                ":2:1: route 1 (webhooks): path prefix");
  ExpectRefused(
      "lease = \"2s\"\nupstream_timeout = \"1s\"\n[[route]]\nin_flight = \"wait\"\n"
      "wait_max = \"5s\"\n",
      ":3:1: route 1 (/): wait bound");
}

TEST_F(BadConfigE2E, MissingFileIsRefused) {
  const RunResult run =
      RunToExit({IDEM_BINARY, "serve", "--listen", "127.0.0.1:0", "--upstream", Upstream(),
                 "--store", store_, "--config", dir_ + "/absent.toml"},
                dir_);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("cannot read config file " + dir_ + "/absent.toml"), std::string::npos)
      << run.output;
}

}  // namespace
}  // namespace idem::e2e
