// idem's HTTP client against a real local server (ScriptedServer): interim answers, limits,
// keep-alive reuse, the pool's bound, servers that close kept-alive connections, cancellation.
#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#pragma GCC diagnostic pop
#include <atomic>
#include <thread>

#include "http/blocking_client.h"
#include "http/test_server.h"

namespace idem::http {
namespace {

using testing::Ok;
using testing::ScriptedReply;
using testing::ScriptedServer;
using testing::SeenRequest;
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;

Request Get(const Url& url, bhttp::verb method = bhttp::verb::get) {
  Request r{method, url.target, 11};
  r.set(bhttp::field::host, url.authority);
  return r;
}

SendOptions Within(std::chrono::milliseconds ms, Limits limits = {}) {
  return SendOptions{std::chrono::steady_clock::now() + ms, limits};
}

struct Fixture {
  explicit Fixture(ScriptedServer::Script script) : server(std::move(script)) {}
  SendResult Send(const std::string& path, bhttp::verb method = bhttp::verb::get,
                  Limits limits = {}) {
    Url url = *ParseUrl(server.Url(path));
    return client->Send(url, Get(url, method), Within(std::chrono::seconds(5), limits));
  }
  ScriptedServer server;
  std::unique_ptr<BlockingClient> client = *BlockingClient::Create({});
};

TEST(HttpClient, EarlyHintsThen503IsSeenAs503) {
  Fixture f([](const SeenRequest&) {
    return ScriptedReply{
        "HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
        "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\ndown"};
  });
  SendResult r = f.Send("/pay");
  ASSERT_TRUE(r.response.ok()) << r.response.status();
  EXPECT_EQ(r.response->result_int(), 503);
  EXPECT_EQ(r.response->body(), "down");
}

TEST(HttpClient, ContinueThen500IsSeenAs500) {
  Fixture f([](const SeenRequest&) {
    return ScriptedReply{
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\n"
        "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nbad"};
  });
  SendResult r = f.Send("/pay", bhttp::verb::post);
  ASSERT_TRUE(r.response.ok()) << r.response.status();
  EXPECT_EQ(r.response->result_int(), 500);
  EXPECT_EQ(r.response->body(), "bad");
}

TEST(HttpClient, EndlessInterimAnswersAreAMalformedAnswer) {
  Fixture f([](const SeenRequest&) {
    std::string many;
    for (int i = 0; i < 20; ++i) many += "HTTP/1.1 100 Continue\r\n\r\n";
    return ScriptedReply{many};
  });
  SendResult r = f.Send("/x");
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kDataLoss);
}

// After a 101 the connection speaks another protocol: no HTTP answer follows to wait for.
TEST(HttpClient, ASwitchOfProtocolsIsAMalformedAnswer) {
  Fixture f([](const SeenRequest&) {
    return ScriptedReply{
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"};
  });
  SendResult r = f.Send("/socket");
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kDataLoss) << r.response.status();
}

TEST(HttpClient, TwoSequentialRequestsShareOneConnection) {
  Fixture f([](const SeenRequest&) { return ScriptedReply{Ok("ok")}; });
  SendResult a = f.Send("/a");
  SendResult b = f.Send("/b");
  ASSERT_TRUE(a.response.ok() && b.response.ok());
  EXPECT_FALSE(a.connection_reused);
  EXPECT_TRUE(b.connection_reused);
  EXPECT_EQ(f.server.connections(), 1);
  ASSERT_EQ(f.server.requests().size(), 2u);
  EXPECT_EQ(f.server.requests()[1].index, 2);
}

TEST(HttpClient, ConnectionCloseAnswerIsNotReused) {
  Fixture f([](const SeenRequest&) {
    return ScriptedReply{"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
                         true};
  });
  ASSERT_TRUE(f.Send("/a").response.ok());
  ASSERT_TRUE(f.Send("/b").response.ok());
  EXPECT_EQ(f.server.connections(), 2);
}

TEST(HttpClient, IdleConnectionClosedByServerIsReplacedEvenForAnUnkeyedPost) {
  // The server advertises keep-alive, then closes: the pool must see it before sending.
  Fixture f([](const SeenRequest& s) { return ScriptedReply{Ok("ok"), s.connection == 1}; });
  ASSERT_TRUE(f.Send("/a").response.ok());
  f.server.WaitClosed(1);
  SendResult b = f.Send("/b", bhttp::verb::post);
  ASSERT_TRUE(b.response.ok()) << b.response.status();
  EXPECT_FALSE(b.connection_reused);
  EXPECT_EQ(f.server.connections(), 2);
  EXPECT_EQ(f.server.requests().size(), 2u);
}

TEST(HttpClient, KeptAliveConnectionClosedWithoutAnswerIsResentOnceForASafeRequest) {
  // The second request on connection 1 is read, then the server closes without answering (its
  // keep-alive timeout raced the request): a GET is sent again on a fresh connection.
  Fixture f([](const SeenRequest& s) {
    if (s.connection == 1 && s.index == 2) return ScriptedReply{"", true};
    return ScriptedReply{Ok("ok")};
  });
  ASSERT_TRUE(f.Send("/a").response.ok());
  SendResult b = f.Send("/b");
  ASSERT_TRUE(b.response.ok()) << b.response.status();
  EXPECT_EQ(f.server.connections(), 2);
  EXPECT_EQ(f.server.requests().size(), 3u);
}

TEST(HttpClient, KeptAliveConnectionClosedWithoutAnswerIsNotResentForAnUnkeyedPost) {
  Fixture f([](const SeenRequest& s) {
    if (s.connection == 1 && s.index == 2) return ScriptedReply{"", true};
    return ScriptedReply{Ok("ok")};
  });
  ASSERT_TRUE(f.Send("/a").response.ok());
  SendResult b = f.Send("/b", bhttp::verb::post);
  EXPECT_EQ(b.response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(b.request_sent);
  EXPECT_EQ(f.server.requests().size(), 2u);
}

// A POST carrying an Idempotency-Key that the server read and then dropped unanswered may have
// run: by default it is not sent again (the key's owner decides; idem serve never re-sends a
// guarded request). A client that owns the key (idem call) may ask for the resend.
TEST(HttpClient, KeptAliveConnectionClosedWithoutAnswerIsNotResentForAKeyedPost) {
  Fixture f([](const SeenRequest& s) {
    if (s.connection == 1 && s.index == 2) return ScriptedReply{"", true};
    return ScriptedReply{Ok("ok")};
  });
  ASSERT_TRUE(f.Send("/a").response.ok());
  Url url = *ParseUrl(f.server.Url("/charges"));
  Request keyed = Get(url, bhttp::verb::post);
  keyed.set("Idempotency-Key", "\"order-17\"");
  SendResult b = f.client->Send(url, keyed, Within(std::chrono::seconds(5)));
  EXPECT_EQ(b.response.status().code(), absl::StatusCode::kUnavailable) << b.response.status();
  EXPECT_TRUE(b.request_sent);
  EXPECT_EQ(f.server.requests().size(), 2u);
  EXPECT_EQ(f.server.connections(), 1);
}

TEST(HttpClient, AKeyedPostIsResentOnceWhenTheCallerOwnsTheKey) {
  Fixture f([](const SeenRequest& s) {
    if (s.connection == 1 && s.index == 2) return ScriptedReply{"", true};
    return ScriptedReply{Ok("ok")};
  });
  ASSERT_TRUE(f.Send("/a").response.ok());
  Url url = *ParseUrl(f.server.Url("/charges"));
  Request keyed = Get(url, bhttp::verb::post);
  keyed.set("Idempotency-Key", "\"order-17\"");
  SendOptions options = Within(std::chrono::seconds(5));
  options.resend = Resend::kIdempotentOrKeyed;
  SendResult b = f.client->Send(url, keyed, options);
  ASSERT_TRUE(b.response.ok()) << b.response.status();
  ASSERT_EQ(f.server.requests().size(), 3u);
  EXPECT_EQ(f.server.requests()[2].idempotency_key, "\"order-17\"");
}

// The gateway's guarded forwards: nothing that may have reached the server is sent again, not
// even an idempotent method.
TEST(HttpClient, WithResendUnwrittenAWrittenRequestIsNeverResent) {
  Fixture f([](const SeenRequest& s) {
    if (s.connection == 1 && s.index == 2) return ScriptedReply{"", true};
    return ScriptedReply{Ok("ok")};
  });
  ASSERT_TRUE(f.Send("/a").response.ok());
  Url url = *ParseUrl(f.server.Url("/charges/ch_1"));
  SendOptions options = Within(std::chrono::seconds(5));
  options.resend = Resend::kUnwritten;
  SendResult b = f.client->Send(url, Get(url, bhttp::verb::put), options);
  EXPECT_EQ(b.response.status().code(), absl::StatusCode::kUnavailable) << b.response.status();
  EXPECT_TRUE(b.request_sent);
  EXPECT_EQ(f.server.requests().size(), 2u);
}

TEST(HttpClient, BodyOverTheLimitIsAClearNonTransientError) {
  Fixture f([](const SeenRequest&) { return ScriptedReply{Ok(std::string(100, 'x'))}; });
  SendResult r = f.Send("/big", bhttp::verb::get, Limits{.max_body = 10});
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(IsTransient(r.response.status()));
  EXPECT_NE(r.response.status().message().find("body larger than the limit of 10 bytes"),
            std::string_view::npos)
      << r.response.status();
}

TEST(HttpClient, HeadersOverTheLimitAreAClearNonTransientError) {
  Fixture f([](const SeenRequest&) {
    return ScriptedReply{"HTTP/1.1 200 OK\r\nX-Big: " + std::string(4000, 'y') +
                         "\r\nContent-Length: 0\r\n\r\n"};
  });
  SendResult r = f.Send("/big", bhttp::verb::get, Limits{.max_header = 1024});
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(IsTransient(r.response.status()));
}

TEST(HttpClient, GarbageAnswerIsMalformedNotTransient) {
  Fixture f([](const SeenRequest&) { return ScriptedReply{"SSH-2.0-OpenSSH\r\n\r\n", true}; });
  SendResult r = f.Send("/x");
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(IsTransient(r.response.status()));
}

TEST(HttpClient, AnswerThatNeverEndsMissesTheDeadline) {
  Fixture f([](const SeenRequest&) {
    return ScriptedReply{"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc", false, true};
  });
  Url url = *ParseUrl(f.server.Url("/slow"));
  SendResult r = f.client->Send(url, Get(url), Within(std::chrono::milliseconds(200)));
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(HttpClient, RefusedConnectionIsUnavailableAndNotSent) {
  uint16_t port;
  {
    ScriptedServer gone([](const SeenRequest&) { return ScriptedReply{}; });
    port = gone.port();
  }
  auto client = *BlockingClient::Create({});
  Url url = *ParseUrl("http://127.0.0.1:" + std::to_string(port) + "/");
  SendResult r = client->Send(url, Get(url), Within(std::chrono::seconds(5)));
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_FALSE(r.request_sent);
}

TEST(HttpClient, UnknownHostIsNotFound) {
  auto client = *BlockingClient::Create({});
  Url url = *ParseUrl("http://no-such-host.invalid/");
  SendResult r = client->Send(url, Get(url), Within(std::chrono::seconds(10)));
  EXPECT_EQ(r.response.status().code(), absl::StatusCode::kNotFound) << r.response.status();
  EXPECT_FALSE(IsTransient(r.response.status()));
}

}  // namespace
}  // namespace idem::http
