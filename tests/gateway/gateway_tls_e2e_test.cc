// End-to-end tests of `idem serve` in front of an https upstream: the real idem binary, a real
// TLS server (src/http's ScriptedServer with a test CA), real sockets. The upstream's certificate
// is trusted through --cacert only; without it the gateway must refuse the connection (502).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "e2e_support.h"
#include "http/test_server.h"

namespace idem::e2e {
namespace {

namespace ht = ::idem::http::testing;

const std::string kBody = R"({"amount":4200,"currency":"eur"})";
constexpr size_t kBigBody = 3 << 20;  // larger than any buffer of the gateway's relay

// The upstream: POST answers 201 with a charge numbered by arrival; GET /big a 3 MiB body.
ht::ScriptedReply Upstream(const ht::SeenRequest& r) {
  if (r.method == "GET" && r.target == "/big") return {ht::Ok(std::string(kBigBody, 'x'))};
  static std::atomic<int> charges{0};
  const std::string body = "{\"id\":\"ch_" + std::to_string(++charges) + "\"}";
  return {"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(body.size()) + "\r\n\r\n" + body};
}

class GatewayTlsE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/idem-gateway-tls-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    cert_ = ht::MakeTestCertificate("DNS:localhost,IP:127.0.0.1");
    upstream_ = std::make_unique<ht::ScriptedServer>(Upstream, &cert_);
    port_ = FreePort();
    admin_port_ = FreePort();
  }

  void TearDown() override {
    gateway_.reset();
    upstream_.reset();
    if (HasFailure()) std::cerr << "idem serve log:\n" << Log() << "\n";
    std::filesystem::remove_all(dir_);
    std::filesystem::remove_all(cert_.dir);
  }

  std::string Log() const {
    std::ifstream in(dir_ + "/idem.log");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  void StartGateway(const std::string& host, std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        IDEM_BINARY,    "serve",
        "--listen",     "127.0.0.1:" + std::to_string(port_),
        "--upstream",   "https://" + host + ":" + std::to_string(upstream_->port()),
        "--store",      "sqlite:" + dir_ + "/idem.db",
        "--admin",      "127.0.0.1:" + std::to_string(admin_port_),
        "--io-threads", "1"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    gateway_ = std::make_unique<Child>(argv, dir_ + "/idem.log");
    ASSERT_TRUE(Eventually([&] {
      return !gateway_->Running() || Send(admin_port_, "GET", "/healthz").status == 200;
    }));
    ASSERT_TRUE(gateway_->Running()) << Log();
  }

  Response Post(const std::string& key) {
    return Send(port_, "POST", "/charges",
                {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, kBody);
  }

  std::string dir_;
  ht::TestCertificate cert_;
  std::unique_ptr<ht::ScriptedServer> upstream_;
  int port_ = 0, admin_port_ = 0;
  std::unique_ptr<Child> gateway_;
};

TEST_F(GatewayTlsE2E, GuardedPostToHttpsUpstreamIsForwardedOnceWithItsKeyAndThenReplayed) {
  StartGateway("127.0.0.1", {"--cacert", cert_.ca_file});
  const Response first = Post("tls-1");
  ASSERT_EQ(first.status, 201) << first.body << first.error;
  const Response retry = Post("tls-1");
  EXPECT_EQ(retry.status, 201);
  EXPECT_EQ(retry.body, first.body);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  const std::vector<ht::SeenRequest> seen = upstream_->requests();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_NE(seen[0].idempotency_key.find("tls-1"), std::string::npos) << seen[0].idempotency_key;
  EXPECT_EQ(seen[0].body, kBody);
}

TEST_F(GatewayTlsE2E, HostNameUpstreamIsVerifiedByNameAndConnectionsAreKeptAlive) {
  StartGateway("localhost", {"--cacert", cert_.ca_file});
  for (const std::string key : {"tls-a", "tls-b", "tls-c"}) {
    const Response r = Post(key);
    ASSERT_EQ(r.status, 201) << r.body << r.error;
  }
  EXPECT_EQ(upstream_->requests().size(), 3u);
  EXPECT_EQ(upstream_->connections(), 1);  // one io thread: one kept-alive TLS connection
}

TEST_F(GatewayTlsE2E, LargePassThroughBodyFromHttpsUpstreamArrivesWhole) {
  StartGateway("127.0.0.1", {"--cacert", cert_.ca_file});
  const Response r = Send(port_, "GET", "/big");
  ASSERT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.body.size(), kBigBody);
  EXPECT_EQ(r.body.find_first_not_of('x'), std::string::npos);
}

TEST_F(GatewayTlsE2E, UntrustedUpstreamCertificateIs502AndNothingIsSentOrStored) {
  StartGateway("127.0.0.1", {});  // the test CA is not in the system store
  const Response r = Post("tls-untrusted");
  EXPECT_EQ(r.status, 502) << r.body;
  EXPECT_EQ(r.Header("Content-Type"), "application/problem+json");
  EXPECT_NE(r.body.find("upstream-unreachable"), std::string::npos) << r.body;
  EXPECT_TRUE(upstream_->requests().empty());
  // Not stored: the same key runs again (and fails the same way) instead of replaying.
  EXPECT_EQ(Post("tls-untrusted").status, 502);
}

TEST_F(GatewayTlsE2E, UnreadableCacertFileStopsTheStart) {
  std::vector<std::string> argv = {
      IDEM_BINARY,  "serve",
      "--listen",   "127.0.0.1:" + std::to_string(port_),
      "--upstream", "https://127.0.0.1:" + std::to_string(upstream_->port()),
      "--store",    "sqlite:" + dir_ + "/idem.db",
      "--cacert",   dir_ + "/no-such-ca.pem"};
  Child gateway(argv, dir_ + "/idem.log");
  EXPECT_EQ(gateway.Wait(std::chrono::seconds(20)), 2);  // a usage error
  EXPECT_NE(Log().find("--cacert"), std::string::npos) << Log();
}

}  // namespace
}  // namespace idem::e2e
