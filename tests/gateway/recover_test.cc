// End-to-end: the completer (docs/gateway.md, "Recovering lapsed claims"). A gateway is killed
// (SIGKILL) while a request of a route with `recover` is upstream; no client retries. Another
// gateway on the same store finds the lapsed claim within the lease plus one recovery interval,
// takes the key over and settles it: `resend` sends the stored request again to an upstream that
// deduplicates by key (examples/charges --dedupe-keys), `status` asks its by-key status URL. A
// later client retry gets the recorded answer.
#include <signal.h>

#include <map>
#include <thread>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds kLease{2000};
constexpr milliseconds kInterval{500};

const char kRecoverConfig[] = R"(
lease = "2s"
upstream_timeout = "1s"
recover_interval = "500ms"
recover_attempts = 3

[[route]]
path_prefix = "/charges"
recover = "resend"

[[route]]
path_prefix = "/pay"
recover = "status"
status_url = "/charges/by-key/{key}"
recovered_status = 201
)";

class RecoverE2E : public GatewayFixture {
 protected:
  RecoverE2E() { charges_flags_ = {"--dedupe-keys"}; }

  void SetUp() override {
    GatewayFixture::SetUp();
    if (HasFatalFailure()) return;
    config_ = Config(kRecoverConfig);
  }

  // Starts another gateway on the store, with the recovery config; returns it and its ports.
  struct Other {
    std::unique_ptr<Child> child;
    int port = 0, admin = 0;
  };
  Other StartOther(const std::string& name) {
    Other o{.port = FreePort(), .admin = FreePort()};
    o.child = Spawn(o.port, o.admin, {"--config", config_}, Upstream(), dir_ + "/" + name + ".log");
    EXPECT_TRUE(o.child->Running()) << ReadFile(dir_ + "/" + name + ".log");
    return o;
  }

  double OtherMetric(const Other& o, const std::string& name) {
    return MetricValue(Send(o.admin, "GET", "/metrics").body, name);
  }

  // Sends each of `keys` to the first gateway with `extra` headers, waits until the upstream saw
  // them all, then kills that gateway. Returns when the requests were sent.
  Clock::time_point SendThenKill(const std::vector<std::string>& keys, const std::string& target,
                                 const Headers& extra) {
    const auto sent = Clock::now();
    std::vector<std::thread> clients;
    for (const std::string& key : keys)
      clients.emplace_back([&, key] { Post(key, kBody, extra, target); });
    EXPECT_TRUE(Eventually([&] { return Stat("calls") == static_cast<long>(keys.size()); }));
    gateway_->Signal(SIGKILL);
    EXPECT_EQ(gateway_->Wait(std::chrono::seconds(10)), 128 + SIGKILL);
    for (std::thread& t : clients) t.join();
    return sent;
  }

  // How many POSTs the upstream received under each key.
  std::map<std::string, int> CallsPerKey() {
    const std::string stats = Stats();
    std::map<std::string, int> calls;
    const size_t open = stats.find("\"keys\":[");
    const size_t close = stats.find(']', open);
    for (size_t at = stats.find('"', open + 8); at < close; at = stats.find('"', at + 1)) {
      const size_t end = stats.find('"', at + 1);
      ++calls[stats.substr(at + 1, end - at - 1)];
      at = end;
    }
    return calls;
  }

  // Waits until `o` counts `n` keys recovered with `result`; returns when it did (or the bound).
  Clock::time_point AwaitRecovered(const Other& o, const std::string& result, int n) {
    const std::string name = "idem_recovered_keys_total{result=\"" + result + "\"}";
    EXPECT_TRUE(Eventually([&] { return OtherMetric(o, name) >= n; }))
        << name << " stayed at " << OtherMetric(o, name);
    return Clock::now();
  }

  // Within the lease plus one recovery interval of the claim (made after `sent`), with a margin
  // for a loaded machine (the scan's jitter, a sanitizer build's slow store calls).
  static void ExpectWithinLeaseAndInterval(Clock::time_point sent, Clock::time_point done) {
    const auto took = std::chrono::duration_cast<milliseconds>(done - sent);
    EXPECT_LE(took, kLease + kInterval * 11 / 10 + milliseconds(1500)) << took.count() << " ms";
  }

  Response PostTo(const Other& o, const std::string& key, const std::string& target,
                  Headers extra = {}) {
    Headers headers = {{"Idempotency-Key", key}, {"Content-Type", "application/json"}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    return Send(o.port, "POST", target, headers, kBody);
  }

  std::string config_;
};

TEST_F(RecoverE2E, ResendCompletesAKilledGatewaysKeyWithoutAClientRetry) {
  StartGateway({"--config", config_});
  Other b = StartOther("idem-b");
  const auto sent = SendThenKill({"order-r"}, "/charges", {{"X-Charges-Delay-Ms", "600"}});
  const auto done = AwaitRecovered(b, "completed", 1);
  ExpectWithinLeaseAndInterval(sent, done);
  EXPECT_EQ(Stat("charges"), 1);           // the effect ran once
  EXPECT_EQ(CallsPerKey()["order-r"], 2);  // the first call and the one resend
  const Response retry = PostTo(b, "order-r", "/charges");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(retry.Header("X-Charge-Id"), "");  // not a replayed header
  EXPECT_NE(retry.body.find("\"id\":\"ch_1\""), std::string::npos) << retry.body;
  EXPECT_EQ(Stat("calls"), 2);  // the retry reached nothing
}

TEST_F(RecoverE2E, StatusRecordsTheAnswerOfAnEffectThatHappened) {
  StartGateway({"--config", config_});
  Other b = StartOther("idem-b");
  const auto sent = SendThenKill({"order-s"}, "/pay", {{"X-Charges-Delay-Ms", "600"}});
  const auto done = AwaitRecovered(b, "completed", 1);
  ExpectWithinLeaseAndInterval(sent, done);
  EXPECT_EQ(Stat("charges"), 1);
  EXPECT_EQ(Stat("calls"), 1);  // asked, never sent again
  const Response retry = PostTo(b, "order-s", "/pay");
  EXPECT_EQ(retry.status, 201) << retry.body;  // the status URL's 200, as recovered_status says
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_NE(retry.body.find("\"id\":\"ch_1\""), std::string::npos) << retry.body;
  EXPECT_EQ(Stat("charges"), 1);
}

TEST_F(RecoverE2E, StatusReleasesTheKeyOfAnEffectThatNeverHappenedAndTheRetryRunsItOnce) {
  StartGateway({"--config", config_});
  Other b = StartOther("idem-b");
  // The upstream answers 503 (no charge) to a gateway that is dead by then.
  const auto sent = SendThenKill({"order-n"}, "/pay",
                                 {{"X-Charges-Delay-Ms", "600"}, {"X-Charges-Status", "503"}});
  const auto done = AwaitRecovered(b, "released", 1);
  ExpectWithinLeaseAndInterval(sent, done);
  EXPECT_EQ(Stat("charges"), 0);
  const Response retry = PostTo(b, "order-n", "/pay");  // the same request, no knob this time
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("charges"), 1);
  EXPECT_EQ(PostTo(b, "order-n", "/pay").Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("charges"), 1);
}

TEST_F(RecoverE2E, TwoGatewaysRecoveringAtOnceNeverBothResendOneKey) {
  StartGateway({"--config", config_});
  Other b = StartOther("idem-b");
  Other c = StartOther("idem-c");
  std::vector<std::string> keys;
  for (int i = 0; i < 12; ++i) keys.push_back("multi-" + std::to_string(i));
  SendThenKill(keys, "/charges", {{"X-Charges-Delay-Ms", "600"}});
  const std::string completed = "idem_recovered_keys_total{result=\"completed\"}";
  EXPECT_TRUE(Eventually([&] {
    return OtherMetric(b, completed) + OtherMetric(c, completed) >=
           static_cast<double>(keys.size());
  }));
  EXPECT_EQ(OtherMetric(b, completed) + OtherMetric(c, completed), keys.size());
  std::map<std::string, int> calls = CallsPerKey();
  for (const std::string& key : keys) EXPECT_EQ(calls[key], 2) << key;  // one resend each
  EXPECT_EQ(Stat("charges"), static_cast<long>(keys.size()));
  // Each resend takes the upstream's 600 ms again, so the two passes overlap and both win keys.
  EXPECT_GT(OtherMetric(b, completed), 0);
  EXPECT_GT(OtherMetric(c, completed), 0);
  std::cerr << "recovered by b: " << OtherMetric(b, completed)
            << ", by c: " << OtherMetric(c, completed) << "\n";
}

TEST_F(RecoverE2E, APoisonRequestEndsFailedFinalAfterItsAttempts) {
  StartGateway({"--config", config_});
  Other b = StartOther("idem-b");
  SendThenKill({"poison"}, "/charges",
               {{"X-Charges-Delay-Ms", "300"}, {"X-Charges-Status", "503"}});
  AwaitRecovered(b, "exhausted", 1);
  EXPECT_EQ(CallsPerKey()["poison"], 1 + 3);  // the first call and recover_attempts resends
  EXPECT_EQ(OtherMetric(b, "idem_recovery_attempts_total"), 3);
  const Response retry = PostTo(b, "poison", "/charges");
  ExpectProblem(retry, 502);
  EXPECT_NE(retry.body.find("recovery-attempts-exhausted"), std::string::npos) << retry.body;
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(CallsPerKey()["poison"], 4);
  EXPECT_EQ(Stat("charges"), 0);
}

}  // namespace
}  // namespace idem::e2e
