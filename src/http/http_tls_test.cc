// https through idem's client against a local TLS server whose certificate a test CA signed:
// verified by default, trusted only through an added CA file, host names and addresses checked.
#include <gtest/gtest.h>

#include <string>

#include "http/blocking_client.h"
#include "http/test_server.h"
#include "http/tls.h"

namespace idem::http {
namespace {

namespace bhttp = boost::beast::http;
using testing::MakeTestCertificate;
using testing::Ok;
using testing::ScriptedReply;
using testing::ScriptedServer;
using testing::SeenRequest;
using testing::TestCertificate;

SendResult Get(BlockingClient& client, const std::string& url_text) {
  Url url = *ParseUrl(url_text);
  Request r{bhttp::verb::get, url.target, 11};
  return client.Send(url, std::move(r),
                     {std::chrono::steady_clock::now() + std::chrono::seconds(10), {}});
}

std::unique_ptr<BlockingClient> Trusting(const std::string& ca_file) {
  BlockingClientOptions options;
  options.tls.ca_file = ca_file;
  return *BlockingClient::Create(options);
}

class HttpTls : public ::testing::Test {
 protected:
  TestCertificate cert_ = MakeTestCertificate("DNS:localhost,IP:127.0.0.1");
  ScriptedServer server_{[](const SeenRequest&) { return ScriptedReply{Ok("secret")}; }, &cert_};
};

TEST_F(HttpTls, AddedCaIsTrustedAndTheAnswerArrives) {
  auto client = Trusting(cert_.ca_file);
  SendResult r = Get(*client, server_.Url("/a"));
  ASSERT_TRUE(r.response.ok()) << r.response.status();
  EXPECT_EQ(r.response->body(), "secret");
  SendResult by_name = Get(*client, server_.Url("/b", "localhost"));
  ASSERT_TRUE(by_name.response.ok()) << by_name.response.status();
}

TEST_F(HttpTls, UnknownCaIsRefusedBeforeAnythingIsSent) {
  auto client = *BlockingClient::Create({});  // the system store only
  SendResult r = Get(*client, server_.Url("/a"));
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kUnauthenticated) << r.response.status();
  EXPECT_NE(r.response.status().message().find("certificate"), std::string_view::npos);
  EXPECT_FALSE(r.request_sent);
  EXPECT_TRUE(server_.requests().empty());
}

TEST_F(HttpTls, CertificateForAnotherNameIsRefused) {
  TestCertificate other = MakeTestCertificate("DNS:example.test");
  ScriptedServer server([](const SeenRequest&) { return ScriptedReply{Ok("x")}; }, &other);
  auto client = Trusting(other.ca_file);
  SendResult r = Get(*client, server.Url("/a", "localhost"));
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kUnauthenticated) << r.response.status();
  SendResult by_ip = Get(*client, server.Url("/a"));
  EXPECT_EQ(by_ip.response.status().code(), absl::StatusCode::kUnauthenticated)
      << by_ip.response.status();
  EXPECT_TRUE(server.requests().empty());
}

TEST_F(HttpTls, KeptAliveTlsConnectionIsReused) {
  auto client = Trusting(cert_.ca_file);
  ASSERT_TRUE(Get(*client, server_.Url("/a")).response.ok());
  SendResult second = Get(*client, server_.Url("/b"));
  ASSERT_TRUE(second.response.ok()) << second.response.status();
  EXPECT_TRUE(second.connection_reused);
  EXPECT_EQ(server_.connections(), 1);
}

TEST(HttpTlsOptions, UnreadableCaFileIsInvalidArgument) {
  EXPECT_EQ(MakeClientTlsContext({.ca_file = "/nonexistent/ca.pem"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BlockingClient::Create({.tls = {.ca_file = "/etc/hostname"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::http
