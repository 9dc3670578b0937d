// `idem call` end to end: the real binary (IDEM_BINARY) against TestHttpServer on 127.0.0.1.
#include <gtest/gtest.h>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "http/test_server.h"
#include "idem_process.h"
#include "test_http_server.h"

namespace idem::testing {
namespace {

// Fast retries so the tests take milliseconds.
std::vector<std::string> Fast(std::vector<std::string> args) {
  for (const char* a : {"--base", "5ms", "--cap", "20ms", "--seed", "1", "--timeout", "5s"}) {
    args.emplace_back(a);
  }
  return args;
}

TEST(IdemCall, RetriesWithTheSameGeneratedKeyUntilSuccess) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "-v", "--retries", "3", "-d", "{}", server.Url("/flaky?fail=2")}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok");
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const auto& req : reqs) {
    EXPECT_EQ(req.method, "POST");
    EXPECT_TRUE(req.has_key);
    EXPECT_EQ(req.idempotency_key, reqs[0].idempotency_key);
  }
  // A quoted UUIDv7: "xxxxxxxx-xxxx-7xxx-...".
  ASSERT_EQ(reqs[0].idempotency_key.size(), 38u);
  EXPECT_EQ(reqs[0].idempotency_key[15], '7');
  EXPECT_NE(r.err.find("attempt 3/4"), std::string::npos) << r.err;
}

TEST(IdemCall, GivenKeyIsSentOnEveryAttempt) {
  TestHttpServer server;
  CallRun r = Idem(Fast(
      {"call", "--key", "order-42", "-X", "PATCH", "--retries", "2", server.Url("/flaky?fail=2")}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const auto& req : reqs) EXPECT_EQ(req.idempotency_key, "\"order-42\"");
}

TEST(IdemCall, GetGetsNoKeyButIsRetried) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", server.Url("/flaky?fail=1")}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_FALSE(reqs[0].has_key);
}

TEST(IdemCall, DoNotRetryAnswerStopsAtOnce) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--retries", "5", "-d", "x", server.Url("/never")}));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(r.out, "down for good");
  EXPECT_NE(r.err.find("Idem-Retry: never"), std::string::npos) << r.err;
}

TEST(IdemCall, ExhaustedAttemptsEndWithTheLastHttpErrorAndExit1) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--retries", "2", server.Url("/always503")}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(r.out, "down");
}

TEST(IdemCall, SpentRetryBudgetStopsRetries) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--retries", "5", "--budget-ratio", "0", "--budget-floor", "0",
                         server.Url("/always503")}));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(server.requests().size(), 1u);
  EXPECT_NE(r.err.find("retry budget spent"), std::string::npos) << r.err;
}

TEST(IdemCall, OpenCircuitBreakerStopsRetries) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--retries", "5", "--breaker", "2", server.Url("/always503")}));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(server.requests().size(), 2u);
}

TEST(IdemCall, PostWithoutKeyIsNeverRetried) {
  TestHttpServer server;
  CallRun r =
      Idem(Fast({"call", "--no-key", "--retries", "5", "-d", "x", server.Url("/always503")}));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_FALSE(reqs[0].has_key);
}

TEST(IdemCall, FinalClientErrorIsNotRetriedAndExits1) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--retries", "5", server.Url("/bad-request")}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(server.requests().size(), 1u);
}

// The time idem call reports in its --json line: from its first attempt to its verdict, so a
// loaded machine's slow process start and exit (a large sanitized binary) do not count.
long ReportedElapsedMs(const std::string& json_line) {
  std::smatch m;
  static const std::regex kElapsed("\"elapsed_ms\":([0-9]+)");
  return std::regex_search(json_line, m, kElapsed) ? std::stol(m[1].str()) : -1;
}

TEST(IdemCall, ResponseThatNeverEndsHitsTheDeadlineInTime) {
  TestHttpServer server;
  CallRun r = Idem({"call", "--json", "--retries", "10", "--base", "10ms", "--cap", "50ms",
                    "--deadline", "800ms", server.Url("/slow")});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  EXPECT_GE(r.took, std::chrono::milliseconds(800));
  const long elapsed = ReportedElapsedMs(r.out);
  EXPECT_GE(elapsed, 800) << r.out;
  EXPECT_LT(elapsed, 800 + 500) << "idem call overran its deadline: " << r.out;
  EXPECT_NE(r.out.find("\"status\":null"), std::string::npos) << "no answer expected: " << r.out;
}

TEST(IdemCall, AttemptTimeoutEndsASlowAnswer) {
  TestHttpServer server;
  CallRun r = Idem({"call", "--json", "--retries", "0", "--timeout", "300ms", server.Url("/slow")});
  EXPECT_EQ(r.exit_code, 4) << r.err;
  const long elapsed = ReportedElapsedMs(r.out);
  EXPECT_GE(elapsed, 300) << r.out;
  EXPECT_LT(elapsed, 300 + 500) << r.out;
}

TEST(IdemCall, EachAttemptAnnouncesItsRemainingBudget) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--deadline", "2s", server.Url("/flaky?fail=1")}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto reqs = server.requests();
  ASSERT_EQ(reqs.size(), 2u);
  const long first = std::stol(reqs[0].deadline_ms);
  const long second = std::stol(reqs[1].deadline_ms);
  EXPECT_LE(first, 2000);
  EXPECT_GT(first, 0);
  EXPECT_LT(second, first);  // the budget only shrinks
}

TEST(IdemCall, RetryAfterIsWaitedOut) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "-v", server.Url("/retry-after")}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_GE(r.took, std::chrono::milliseconds(1000));  // backoff alone would be 5 ms
  EXPECT_NE(r.err.find("Retry-After honoured"), std::string::npos) << r.err;
}

TEST(IdemCall, RetryAfterBeyondTheBoundStops) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--max-retry-after", "500ms", server.Url("/retry-after")}));
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(IdemCall, UnreachableHostExits3AfterRetries) {
  CallRun r = Idem(
      Fast({"call", "--retries", "2", "http://127.0.0.1:" + std::to_string(UnusedPort()) + "/"}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("could not connect"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("3 attempts"), std::string::npos) << r.err;
}

// Issue 12 item 3: a 1xx interim answer is not the final one.
TEST(IdemCall, EarlyHintsThen503IsRetriedAndExits1) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--retries", "2", "-d", "x", server.Url("/early-hints-503")}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(r.out, "down");
}

TEST(IdemCall, ContinueThen500IsRetriedAndExits1) {
  TestHttpServer server;
  CallRun r = Idem(Fast({"call", "--retries", "1", "-i", server.Url("/continue-500")}));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(server.requests().size(), 2u);
  EXPECT_EQ(r.out.rfind("HTTP/1.1 500 Internal Server Error\r\n", 0), 0u) << r.out;
  EXPECT_EQ(r.out.substr(r.out.size() - 6), "broken");
}

// Issue 12 item 4: a port out of range is refused, never wrapped around or dialled.
TEST(IdemCall, PortOutOfRangeIsAUsageError) {
  for (const char* url : {"http://127.0.0.1:99999/pay", "http://127.0.0.1:65536/pay",
                          "http://127.0.0.1:0/pay", "http://127.0.0.1:8o8o/pay"}) {
    CallRun r = Idem({"call", "-d", "x=1", url});
    EXPECT_EQ(r.exit_code, 2) << url << ": " << r.err;
    EXPECT_NE(r.err.find("port"), std::string::npos) << url << ": " << r.err;
  }
}

TEST(IdemCall, HttpsWithTheServersCaAddedSucceeds) {
  http::testing::TestCertificate cert = http::testing::MakeTestCertificate("IP:127.0.0.1");
  http::testing::ScriptedServer server(
      [](const http::testing::SeenRequest&) {
        return http::testing::ScriptedReply{http::testing::Ok("paid")};
      },
      &cert);
  CallRun r = Idem(Fast({"call", "--cacert", cert.ca_file, "-d", "x=1", server.Url("/pay")}));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "paid");
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].body, "x=1");
  EXPECT_FALSE(server.requests()[0].idempotency_key.empty());
}

TEST(IdemCall, HttpsServerOfAnUnknownCaIsRefusedWithNothingSent) {
  http::testing::TestCertificate cert = http::testing::MakeTestCertificate("IP:127.0.0.1");
  http::testing::ScriptedServer server(
      [](const http::testing::SeenRequest&) {
        return http::testing::ScriptedReply{http::testing::Ok("paid")};
      },
      &cert);
  CallRun r = Idem(Fast({"call", "--retries", "0", "-d", "x=1", server.Url("/pay")}));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("certificate"), std::string::npos) << r.err;
  EXPECT_TRUE(server.requests().empty());
}

TEST(IdemCall, RefusedCertificateAndUnknownHostAreNotRetried) {
  http::testing::TestCertificate cert = http::testing::MakeTestCertificate("IP:127.0.0.1");
  http::testing::ScriptedServer server(
      [](const http::testing::SeenRequest&) {
        return http::testing::ScriptedReply{http::testing::Ok("paid")};
      },
      &cert);
  for (const std::string& url : {server.Url("/pay"), std::string("http://no-such-host.invalid/")}) {
    CallRun r = Idem(Fast({"call", "-v", "--retries", "3", url}));
    EXPECT_EQ(r.exit_code, 3) << url << ": " << r.err;
    EXPECT_NE(r.err.find("attempt 1/4"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("attempt 2/4"), std::string::npos) << r.err;
  }
  EXPECT_EQ(server.connections(), 1);
}

TEST(IdemCall, IncludePrintsStatusLineAndHeaders) {
  TestHttpServer server;
  CallRun r = Idem({"call", "-i", server.Url("/ok")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("Content-Length: 2\r\n"), std::string::npos);
  EXPECT_EQ(r.out.substr(r.out.size() - 6), "\r\n\r\nok");
}

TEST(IdemCall, BadInputIsAUsageErrorWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"call", "--deadline", "5x", "http://127.0.0.1:1/"}, "unknown unit 'x'"},
      {{"call", "--timeout", "-1s", "http://127.0.0.1:1/"}, "negative"},
      {{"call", "--retries", "-1", "http://127.0.0.1:1/"}, "--retries must be 0 or more"},
      {{"call", "--backoff", "random", "http://127.0.0.1:1/"}, "unknown backoff"},
      {{"call", "--base", "2s", "--cap", "1s", "http://127.0.0.1:1/"}, "at least the base"},
      {{"call", "ftp://127.0.0.1:1/"}, "use http:// or https://"},
      {{"call", "--cacert", "/nonexistent/ca.pem", "https://127.0.0.1:1/"}, "/nonexistent/ca.pem"},
      {{"call", "-H", "NoColon", "http://127.0.0.1:1/"}, "'Name: value'"},
      {{"call", "--key", "a b", "http://127.0.0.1:1/"}, "--key"},
      {{"call", "--key", "k", "--no-key", "http://127.0.0.1:1/"}, "contradict"},
      {{"call", "-d", "@/nonexistent/file", "http://127.0.0.1:1/"}, "cannot read"},
      {{"call"}, "url"},
  };
  for (const Case& c : cases) {
    CallRun r = Idem(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[1] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

TEST(IdemProgram, HelpAndVersionExitZero) {
  CallRun version = Idem({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_EQ(version.out.rfind("idem ", 0), 0u) << version.out;
  CallRun help = Idem({"help", "call"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("Exit status:"), std::string::npos) << help.out;
  CallRun call_help = Idem({"call", "--help"});
  EXPECT_EQ(call_help.exit_code, 0);
  EXPECT_EQ(call_help.out, help.out);
}

}  // namespace
}  // namespace idem::testing
