// `idem relay --admin ADDR` end to end: the real binary serving /metrics (Prometheus text) and
// /healthz while it publishes to a real HTTP receiver. Compiled twice, like relay_http_test.cc.
#include <gtest/gtest.h>
#include <signal.h>

#include <string>

#include "e2e_support.h"
#include "idem_process.h"
#include "relay_fixture.h"
#include "relay_process.h"
namespace idem::testing {
namespace {

using RelayAdmin = RelayE2e;

TEST_F(RelayAdmin, MetricsCountSentRetriedDeadAndLatencyWhileTheRelayRuns) {
  SetAnswer([](const SeenRequest& r) {
    if (r.body == "poison") {
      return ScriptedReply{"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\nbroke"};
    }
    return ScriptedReply{http::testing::Ok("{}")};
  });
  Add({{"a", "1"}, {"a", "2"}, {"b", "poison"}});
  const int port = e2e::FreePort();
  Background relay(RelayArgs(
      {"--poll", "50ms", "--max-attempts", "2", "--admin", "127.0.0.1:" + std::to_string(port)}));
  auto metric = [&](const std::string& name) {
    return e2e::MetricValue(e2e::Send(port, "GET", "/metrics").body, name);
  };
  // The relay counts a message after its answer: wait for the counters, not the receiver.
  ASSERT_TRUE(e2e::Eventually([&] { return metric("idem_relay_dead_total") == 1; })) << relay.err();
  const e2e::Response scraped = e2e::Send(port, "GET", "/metrics");
  EXPECT_EQ(scraped.status, 200);
  EXPECT_EQ(scraped.Header("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& text = scraped.body;
  EXPECT_EQ(e2e::MetricValue(text, "idem_relay_sent_total"), 2) << text;
  EXPECT_EQ(e2e::MetricValue(text, "idem_relay_retried_total"), 1) << text;
  EXPECT_EQ(e2e::MetricValue(text, "idem_relay_dead_total"), 1) << text;
  EXPECT_GE(e2e::MetricValue(text, "idem_relay_pending"), 0) << text;  // counted
  EXPECT_NE(text.find("# TYPE idem_relay_delivery_latency_seconds histogram"), std::string::npos);
  EXPECT_EQ(e2e::MetricValue(text, "idem_relay_delivery_latency_seconds_count"), 2) << text;
  EXPECT_EQ(e2e::MetricValue(text, "idem_relay_delivery_latency_seconds_bucket{le=\"+Inf\"}"), 2)
      << text;
  const e2e::Response health = e2e::Send(port, "GET", "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");
  EXPECT_EQ(e2e::Send(port, "GET", "/nope").status, 404);
  EXPECT_EQ(e2e::Send(port, "POST", "/metrics", {}, "x").status, 405);
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
  EXPECT_NE(relay.err().find("admin on 127.0.0.1:" + std::to_string(port)), std::string::npos)
      << relay.err();
}

TEST_F(RelayAdmin, AdminAddressThatIsMalformedOrTakenIsAUsageError) {
  CallRun malformed = Idem(RelayArgs({"--once", "--admin", "localhost"}));
  EXPECT_EQ(malformed.exit_code, 2) << malformed.err;
  EXPECT_NE(malformed.err.find("--admin 'localhost'"), std::string::npos) << malformed.err;
  const std::string taken = "127.0.0.1:" + std::to_string(server_->port());  // the receiver's
  CallRun busy = Idem(RelayArgs({"--once", "--admin", taken}));
  EXPECT_EQ(busy.exit_code, 2) << busy.err;
  EXPECT_NE(busy.err.find("cannot listen"), std::string::npos) << busy.err;
}

}  // namespace
}  // namespace idem::testing
