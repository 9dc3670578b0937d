// idem serve re-reads its config file on SIGHUP (issue 26, item 3): routes swap at once for new
// requests, a request in flight finishes under the route it started with, a file that does not
// validate (or that changes a setting only a restart can apply) is refused with one log line and
// the old settings keep serving, and no connection is dropped. SQLite only.
#include <csignal>
#include <thread>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

constexpr const char* kHead = "drain_timeout = \"5s\"\n";

class ReloadE2E : public GatewayFixture {
 protected:
  // Writes `toml` as the config file, sends SIGHUP and waits for the gateway's answer in its log
  // (the count-th "SIGHUP:" line); returns that line.
  std::string Reload(const std::string& toml) {
    Config(toml);
    const size_t before = Count("SIGHUP:");
    gateway_->Signal(SIGHUP);
    EXPECT_TRUE(Eventually([&] { return Count("SIGHUP:") > before; })) << Log();
    const std::string log = Log();
    const size_t at = log.rfind("SIGHUP:");
    return at == std::string::npos ? "" : log.substr(at, log.find('\n', at) - at);
  }
  size_t Count(const std::string& text) {
    const std::string log = Log();
    size_t n = 0;
    for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) ++n;
    return n;
  }
  void Start(const std::string& toml) { StartGateway({"--config", Config(toml)}); }
  std::string KeepAliveRequest(RawConnection& c, const std::string& key) {
    c.Write("POST /charges HTTP/1.1\r\nHost: x\r\nIdempotency-Key: " + key +
            "\r\nContent-Type: application/json\r\nContent-Length: " +
            std::to_string(kBody.size()) + "\r\n\r\n" + kBody);
    return c.ReadUntil("\"request_bytes\"", std::chrono::seconds(20));
  }
};

TEST_F(ReloadE2E, ARouteAddedBySighupGuardsTheNextRequestAndNoConnectionIsDropped) {
  // Paths no route covers pass through (unmatched = "pass"), /charges among them.
  Start(std::string(kHead) + "unmatched = \"pass\"\n[[route]]\npath_prefix = \"/other\"\n");
  RawConnection kept(port_);
  ASSERT_NE(KeepAliveRequest(kept, "before").find("201 Created"), std::string::npos);
  // /charges is not guarded yet: the same key runs twice.
  ASSERT_EQ(Post("k1").status, 201);
  ASSERT_EQ(Post("k1").HeaderCount("Idempotent-Replayed"), 0);
  const double open = Metric("idem_open_connections");

  const std::string said = Reload(std::string(kHead) + "[[route]]\npath_prefix = \"/charges\"\n");
  EXPECT_NE(said.find("reloaded"), std::string::npos) << said;
  ASSERT_EQ(Post("k2").status, 201);
  const Response again = Post("k2");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(again.Header("Idempotent-Replayed"), "true");
  // The connection opened before the reload still carries requests, and none was closed.
  EXPECT_NE(KeepAliveRequest(kept, "after").find("201 Created"), std::string::npos);
  EXPECT_FALSE(kept.closed());
  EXPECT_EQ(Metric("idem_open_connections"), open);
}

TEST_F(ReloadE2E, ARequestInFlightFinishesUnderTheRouteItStartedWith) {
  // The old route stores a 503 as final; the new one leaves it transient (never stored).
  Start(std::string(kHead) + "[[route]]\npath_prefix = \"/charges\"\nfinal_statuses = [503]\n");
  Response first;
  std::thread client([&] {
    first = Post("held", kBody, {{"X-Charges-Hold", "reload"}, {"X-Charges-Status", "503"}});
  });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  const std::string said = Reload(std::string(kHead) + "[[route]]\npath_prefix = \"/charges\"\n");
  EXPECT_NE(said.find("reloaded"), std::string::npos) << said;
  Send(charges_port_, "POST", "/release/reload");
  client.join();
  EXPECT_EQ(first.status, 503);
  // Stored under the old route's rule: the retry is replayed, not run again.
  const Response retry = Post("held", kBody, {{"X-Charges-Status", "503"}});
  EXPECT_EQ(retry.status, 503);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
  // A new key runs under the new route: its 503 is not stored.
  ASSERT_EQ(Post("new", kBody, {{"X-Charges-Status", "503"}}).status, 503);
  EXPECT_EQ(Post("new", kBody, {{"X-Charges-Status", "503"}}).HeaderCount("Idempotent-Replayed"),
            0);
  EXPECT_EQ(Stat("calls"), 3);
}

TEST_F(ReloadE2E, AnInvalidFileIsRefusedWithItsReasonAndTheOldRoutesKeepServing) {
  Start(std::string(kHead) + "[[route]]\npath_prefix = \"/charges\"\n");
  std::string said = Reload(std::string(kHead) + "[[route]]\npath_prefix = \"charges\"\n");
  EXPECT_NE(said.find("not reloaded"), std::string::npos) << said;
  EXPECT_NE(said.find("path prefix"), std::string::npos) << said;
  said = Reload(std::string(kHead) + "lease = \"thirty\"\n");
  EXPECT_NE(said.find("not reloaded"), std::string::npos) << said;
  EXPECT_NE(said.find(":2:"), std::string::npos) << said;  // the file's line
  ASSERT_TRUE(gateway_->Running());
  ASSERT_EQ(Post("k").status, 201);
  EXPECT_EQ(Post("k").Header("Idempotent-Replayed"), "true");
}

TEST_F(ReloadE2E, ASettingOnlyARestartAppliesIsNamedInTheRefusal) {
  Start(std::string(kHead) + "[[route]]\npath_prefix = \"/charges\"\n");
  const std::string said = Reload(std::string(kHead) +
                                  "lease = \"40s\"\nretention = \"1h\"\n[[route]]\n"
                                  "path_prefix = \"/other\"\n");
  EXPECT_NE(said.find("not reloaded"), std::string::npos) << said;
  EXPECT_NE(said.find("lease"), std::string::npos) << said;
  EXPECT_NE(said.find("retention"), std::string::npos) << said;
  // Nothing of the file was applied: /charges is still guarded.
  ASSERT_EQ(Post("k").status, 201);
  EXPECT_EQ(Post("k").Header("Idempotent-Replayed"), "true");
}

}  // namespace
}  // namespace idem::e2e
