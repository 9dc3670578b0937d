// End-to-end: how `idem serve` reads a client's HTTP/1.1 framing (docs/gateway.md "What happens to
// a request"). A request whose body length two parsers could read differently (request smuggling)
// is refused before anything is forwarded; Expect: 100-continue is answered before the body is
// sent; HTTP/1.0 clients get answers they can frame; pipelined requests are answered in order.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "gateway_fixture.h"
#include "scripted_upstream.h"

namespace idem::e2e {
namespace {

using std::chrono::milliseconds;

// One answer cut from the bytes of a connection, framed by its Content-Length.
struct RawAnswer {
  std::string head;  // status line and header fields, without the blank line
  std::string body;
  bool Has(const std::string& text) const;
};

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool RawAnswer::Has(const std::string& text) const {
  return Lower(head).find(text) != std::string::npos;
}

// Splits `bytes` into the Content-Length-framed answers it holds; bytes that do not make a whole
// answer (or one without Content-Length) end the list and are returned in `rest`.
std::vector<RawAnswer> Answers(const std::string& bytes, std::string* rest = nullptr) {
  std::vector<RawAnswer> out;
  size_t at = 0;
  for (;;) {
    const size_t end = bytes.find("\r\n\r\n", at);
    if (end == std::string::npos) break;
    RawAnswer a{.head = bytes.substr(at, end - at), .body = ""};
    const std::string lower = Lower(a.head);
    const size_t field = lower.find("\r\ncontent-length:");
    if (field == std::string::npos) break;
    const size_t length = std::strtoul(lower.c_str() + field + 17, nullptr, 10);
    if (bytes.size() < end + 4 + length) break;
    a.body = bytes.substr(end + 4, length);
    out.push_back(std::move(a));
    at = end + 4 + length;
  }
  if (rest != nullptr) *rest = bytes.substr(at);
  return out;
}

class E2E_SUITE(ClientFramingE2E) : public GatewayFixture {
 protected:
  // The head of a POST /charges (guarded when `key` is not empty) with `fields` (each ending in
  // CRLF) and the blank line.
  static std::string PostHead(const std::string& key, const std::string& fields,
                              const std::string& version = "HTTP/1.1") {
    return "POST /charges " + version + "\r\nHost: x\r\n" +
           (key.empty() ? "" : "Idempotency-Key: " + key + "\r\n") +
           "Content-Type: application/json\r\n" + fields + "\r\n";
  }
  static std::string Length(size_t n) { return "Content-Length: " + std::to_string(n) + "\r\n"; }
  static std::string Hex(size_t n) {
    char out[20];
    std::snprintf(out, sizeof out, "%zx", n);
    return out;
  }
};
#define ClientFramingE2E E2E_SUITE(ClientFramingE2E)

// A front end and the server behind it that disagree on where a body ends let a client hide a
// second request in the first one's body (RFC 9112 §6.3, §11.2): every framing that is not one
// Content-Length or a Transfer-Encoding ending in a single chunked is a 400, and the connection is
// closed before anything is forwarded, guarded or passed through.
TEST_F(ClientFramingE2E, AmbiguousBodyLengthIs400AndNothingIsForwarded) {
  StartGateway();
  const std::vector<std::string> framings = {
      "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
      "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n",
      "Content-Length: 4\r\nContent-Length: 120\r\n",
      "Content-Length: 4, 120\r\n",
      "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
      "Transfer-Encoding: chunked, chunked\r\n",
      "Transfer-Encoding: chunked, gzip\r\n",
      "Transfer-Encoding: gzip\r\n",
      "Transfer-Encoding: gzip\r\nContent-Length: 4\r\n",
      "Transfer-Encoding : chunked\r\n",
  };
  // What a lenient parser would take for the next request on the connection.
  const std::string hidden =
      "POST /charges HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
      Length(kBody.size()) + "\r\n" + kBody;
  const std::vector<std::string> heads = {
      "POST /charges HTTP/1.1\r\nHost: x\r\nIdempotency-Key: smuggle\r\n",  // guarded
      "POST /charges HTTP/1.1\r\nHost: x\r\n",  // a keyless POST passes through
      "PUT /charges HTTP/1.1\r\nHost: x\r\n",
      "GET /stats HTTP/1.1\r\nHost: x\r\n",
  };
  const auto expect_refused = [this](const std::string& request) {
    RawConnection c(port_);
    ASSERT_TRUE(c.Write(request));
    const std::string answer = c.ReadUntilClosed(milliseconds(5000));
    EXPECT_TRUE(c.closed());
    EXPECT_EQ(answer.rfind("HTTP/1.", 0), 0u) << answer;
    EXPECT_EQ(answer.substr(8, 5), " 400 ") << answer;
    EXPECT_NE(answer.find("application/problem+json"), std::string::npos) << answer;
    EXPECT_EQ(Answers(answer).size(), 1u) << answer;
  };
  for (const std::string& head : heads) {
    for (const std::string& framing : framings) {
      SCOPED_TRACE(head.substr(0, head.find(' ', 5)) + " with " + framing);
      expect_refused(head + framing + "\r\n0\r\n\r\n" + hidden);
    }
  }
  // HTTP/1.0 has no chunked coding: its Transfer-Encoding is a framing to distrust (§6.1).
  expect_refused("POST /charges HTTP/1.0\r\nIdempotency-Key: smuggle-10\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden);
  expect_refused("POST /charges HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden);
  EXPECT_EQ(Stat("calls"), 0) << "a request was forwarded";
}

// A guarded request's body is read whole and forwarded with a Content-Length: in a transfer coding
// other than chunked (`gzip, chunked`) it would reach the upstream still encoded, as a plain body.
// 501, nothing forwarded, nothing stored (the same request without the coding then runs).
TEST_F(ClientFramingE2E, AGuardedBodyInATransferCodingOtherThanChunkedIs501) {
  StartGateway();
  RawConnection c(port_);
  ASSERT_TRUE(c.Write(PostHead("coded", "Transfer-Encoding: gzip, chunked\r\n") + Hex(4) +
                      "\r\nabcd\r\n0\r\n\r\n"));
  const std::string answer = c.ReadUntilClosed(milliseconds(5000));
  EXPECT_TRUE(c.closed());
  EXPECT_EQ(answer.rfind("HTTP/1.1 501 ", 0), 0u) << answer;
  EXPECT_NE(answer.find("application/problem+json"), std::string::npos) << answer;
  EXPECT_NE(answer.find("transfer coding 'gzip'"), std::string::npos) << answer;
  EXPECT_EQ(Stat("calls"), 0) << "the encoded body was forwarded";
  const Response plain = Post("coded");
  EXPECT_EQ(plain.status, 201) << plain.body;
  EXPECT_EQ(plain.HeaderCount("Idempotent-Replayed"), 0) << "the 501 was stored";
}

// Routes match a request's path, and the upstream's path prefix is put before it: a target that
// is not a path would pass by a route that requires a key, or reach past the prefix ("/st" +
// "ats"). The absolute-form (http://host/path) is read as its path; any other target is a 400
// (but OPTIONS's "*").
TEST_F(ClientFramingE2E, ARequestTargetIsReadAsItsPathOrRefused) {
  StartGateway({"--config", Config("[[route]]\npath_prefix = \"/charges\"\nkey = \"required\"\n")},
               Upstream() + "/st");
  const auto status = [this](const std::string& request_line, const std::string& fields = "",
                             const std::string& body = "") {
    RawConnection c(port_);
    EXPECT_TRUE(c.Write(request_line + "\r\nHost: x\r\nConnection: close\r\n" + fields +
                        Length(body.size()) + "\r\n" + body));
    const std::vector<RawAnswer> answers = Answers(c.ReadUntilClosed(milliseconds(10000)));
    EXPECT_EQ(answers.size(), 1u) << request_line;
    return answers.empty() ? std::string() : answers[0].head.substr(9, 3);
  };
  const std::string json = "Content-Type: application/json\r\n";
  for (const std::string target : {"http://x/charges", "HTTPS://x:8/charges"}) {
    SCOPED_TRACE(target);
    EXPECT_EQ(status("POST " + target + " HTTP/1.1", json, kBody), "400");  // the route's key
    EXPECT_EQ(status("POST " + target + " HTTP/1.1", json + "Idempotency-Key: absolute\r\n",
                     kBody),
              "201");
  }
  EXPECT_EQ(Stat("calls"), 1) << "the absolute-form targets were not read as /charges";
  const Response replay = Post("absolute");  // the same request, in origin-form
  EXPECT_EQ(replay.HeaderCount("Idempotent-Replayed"), 1) << replay.status << replay.body;
  for (const std::string line : {"POST charges HTTP/1.1", "GET ats HTTP/1.1", "GET * HTTP/1.1",
                                 "POST x:80 HTTP/1.1", "GET ftp://x/ats HTTP/1.1"}) {
    EXPECT_EQ(status(line, json, kBody), "400") << line;
  }
  EXPECT_EQ(status("OPTIONS * HTTP/1.1"), "404");  // passed through; the upstream has no answer
  EXPECT_EQ(Stat("calls"), 1);
}

// A path is matched, fingerprinted and forwarded in one spelling: percent-encoded unreserved
// characters decoded, dot segments removed (RFC 3986 §6.2.2). "/%63harges" and "/x/../charges"
// name /charges, which an upstream that normalises paths serves: a route for it guards them.
TEST_F(ClientFramingE2E, APathIsMatchedInItsNormalSpelling) {
  StartGateway({"--config", Config("[[route]]\npath_prefix = \"/charges\"\nkey = \"required\"\n")});
  const Headers json = {{"Content-Type", "application/json"}};
  for (const std::string target :
       {"/%63harges", "/x/../charges", "/./charges", "/%2e%2E/charges", "/a/b/../../charges/./"}) {
    const Response keyless = Send(port_, "POST", target, json, kBody);
    EXPECT_EQ(keyless.status, 400) << target << " " << keyless.body;
  }
  EXPECT_EQ(Stat("calls"), 0);
  EXPECT_EQ(Post("normal", kBody, {}, "/x/%2E%2E/charges").status, 201);
  const Response replay = Post("normal");  // the same request, spelt plainly
  EXPECT_EQ(replay.HeaderCount("Idempotent-Replayed"), 1) << replay.status << replay.body;
  const Response stats = Send(port_, "GET", "/charges/../st%61ts");  // forwarded as /stats
  EXPECT_EQ(stats.status, 200) << stats.body;
  EXPECT_EQ(JsonNumber(stats.body, "calls"), 1) << stats.body;
}

// The client's hop-by-hop fields describe its connection to the gateway, not the request (RFC 9110
// §7.6.1): none reaches the upstream, guarded or passed through, nor the fields its Connection
// names. An Upgrade forwarded could switch a pooled upstream connection to another protocol.
TEST_F(ClientFramingE2E, TheClientsHopByHopFieldsAreNotForwarded) {
  std::mutex mu;
  std::vector<std::string> forwarded;
  ScriptedUpstream upstream([&](const std::string& head) {
    std::lock_guard lock(mu);
    forwarded.push_back(Lower(head));
    return ScriptedUpstream::Reply{ScriptedUpstream::Answer("201 Created", "{}")};
  });
  StartGateway({}, upstream.Url());
  const std::string hop =
      "Connection: X-Private, Upgrade, close\r\nX-Private: secret\r\nUpgrade: websocket\r\n"
      "Keep-Alive: timeout=5\r\nTE: trailers\r\nProxy-Connection: keep-alive\r\n"
      "X-Kept: yes\r\n";
  // A chunked body's trailer fields are dropped, hop-by-hop or not (see
  // TrailerFieldsNeitherChooseTheTenantNorReachTheUpstream).
  const std::string in_trailer =
      "Transfer-Encoding: chunked\r\nConnection: close\r\nX-Kept: yes\r\n";
  const std::string chunks = Hex(kBody.size()) + "\r\n" + kBody +
                             "\r\n0\r\nUpgrade: websocket\r\nKeep-Alive: timeout=5\r\n"
                             "TE: trailers\r\nProxy-Connection: keep-alive\r\n\r\n";
  for (const std::string& request :
       {PostHead("hop", Length(kBody.size()) + hop) + kBody,
        PostHead("", Length(kBody.size()) + hop) + kBody,
        PostHead("hop-trailer", in_trailer) + chunks}) {
    RawConnection c(port_);
    ASSERT_TRUE(c.Write(request));
    const std::string answer = c.ReadUntilClosed(milliseconds(10000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 201", 0), 0u) << answer;
  }
  std::lock_guard lock(mu);
  ASSERT_EQ(forwarded.size(), 3u);
  for (const std::string& head : forwarded) {
    for (const char* field : {"x-private", "upgrade", "\r\nkeep-alive:", "\r\nte:", "proxy-"})
      EXPECT_EQ(head.find(field), std::string::npos) << field << " in\n" << head;
    EXPECT_NE(head.find("\r\nx-kept: yes"), std::string::npos) << head;
    EXPECT_NE(head.find("\r\ncontent-length: " + std::to_string(kBody.size())), std::string::npos)
        << head;
  }
}

// Regression: a chunked body's trailer fields were taken for header fields. With --tenant-header,
// a trailer X-Tenant chose the tenant (a client sending its own Authorization got acme's stored
// answer for acme's key), and a trailer Authorization reached the upstream as the request's
// credential, which a proxy in front of idem checking the head never sees. Trailer fields now
// decide nothing and are not forwarded, guarded or passed through.
TEST_F(ClientFramingE2E, TrailerFieldsNeitherChooseTheTenantNorReachTheUpstream) {
  std::mutex mu;
  std::vector<std::string> forwarded;
  ScriptedUpstream upstream([&](const std::string& head) {
    std::lock_guard lock(mu);
    forwarded.push_back(Lower(head));
    const std::string body = "{\"charge\":" + std::to_string(forwarded.size()) + "}";
    return ScriptedUpstream::Reply{.bytes = ScriptedUpstream::Answer("201 Created", body),
                                   .close = true};
  });
  StartGateway({"--tenant-header", "X-Tenant"}, upstream.Url());
  const Response acme = Post("order-1", kBody, {{"X-Tenant", "acme"}});
  ASSERT_EQ(acme.status, 201) << acme.body;
  const auto exchange = [this](const std::string& key, const std::string& head_fields,
                               const std::string& trailer) {
    RawConnection c(port_);
    EXPECT_TRUE(c.Write(PostHead(key, head_fields + "Transfer-Encoding: chunked\r\n"
                                                    "Connection: close\r\n") +
                        Hex(kBody.size()) + "\r\n" + kBody + "\r\n0\r\n" + trailer + "\r\n"));
    const std::vector<RawAnswer> answers = Answers(c.ReadUntilClosed(milliseconds(10000)));
    EXPECT_EQ(answers.size(), 1u) << key;
    return answers.empty() ? RawAnswer{} : answers[0];
  };
  const RawAnswer own =
      exchange("order-1", "Authorization: Bearer mallory\r\n", "X-Tenant: acme\r\n");
  EXPECT_EQ(own.head.substr(9, 3), "201") << own.head;
  EXPECT_FALSE(own.Has("idempotent-replayed")) << "the trailer chose acme's scope: " << own.body;
  EXPECT_NE(own.body, acme.body);
  for (const std::string key : {"order-2", ""}) {
    const RawAnswer answer =
        exchange(key, "", "Authorization: Bearer forged\r\nX-Tenant: acme\r\n");
    EXPECT_EQ(answer.head.substr(9, 3), "201") << key << ": " << answer.head;
  }
  std::lock_guard lock(mu);
  EXPECT_EQ(forwarded.size(), 4u);
  EXPECT_NE(forwarded.back().find("\r\ncontent-type: application/json"), std::string::npos);
  if (forwarded.size() == 4u) {
    EXPECT_NE(forwarded[1].find("\r\nauthorization: bearer mallory"), std::string::npos)
        << forwarded[1];
  }
  for (size_t i = 1; i < forwarded.size(); ++i) {
    EXPECT_EQ(forwarded[i].find("forged"), std::string::npos) << forwarded[i];
    EXPECT_EQ(forwarded[i].find("x-tenant"), std::string::npos) << forwarded[i];
  }
}

// curl sends Expect: 100-continue with a large body and waits for the 100 before sending it: the
// gateway answers it at once, on both paths, so no client stalls.
TEST_F(ClientFramingE2E, ExpectContinueIsAnsweredBeforeTheBodyIsSent) {
  StartGateway();
  for (const std::string key : {"continue", ""}) {
    SCOPED_TRACE(key.empty() ? "passed through" : "guarded");
    RawConnection c(port_);
    ASSERT_TRUE(c.Write(PostHead(
        key, Length(kBody.size()) + "Expect: 100-continue\r\nConnection: close\r\n")));
    EXPECT_EQ(c.ReadUntil("\r\n\r\n", milliseconds(5000)), "HTTP/1.1 100 Continue\r\n\r\n");
    ASSERT_TRUE(c.Write(kBody));
    const std::string answer = c.ReadUntilClosed(milliseconds(10000));
    EXPECT_EQ(answer.rfind("HTTP/1.1 201", 0), 0u) << answer;
  }
  EXPECT_EQ(Stat("calls"), 2);
  EXPECT_EQ(Post("continue").HeaderCount("Idempotent-Replayed"), 1);
}

// A request refused from its header alone is answered without waiting for the body, and without a
// 100 Continue first (the client need not send the body at all).
TEST_F(ClientFramingE2E, ExpectContinueWithABodyOverMaxBodyIs413AtOnce) {
  StartGateway({"--max-body", "1KiB"});
  RawConnection c(port_);
  ASSERT_TRUE(c.Write(PostHead("big", Length(4096) + "Expect: 100-continue\r\n")));
  const std::string answer = c.ReadUntilClosed(milliseconds(5000));
  EXPECT_TRUE(c.closed());
  EXPECT_EQ(answer.rfind("HTTP/1.1 413", 0), 0u) << answer;
  EXPECT_NE(answer.find("application/problem+json"), std::string::npos) << answer;
  EXPECT_EQ(Stat("calls"), 0);
}

// An HTTP/1.0 client frames an answer by its Content-Length or by the end of the connection, and
// keeps a connection only when it asked to: the gateway never answers it chunked, closes after the
// answer, and a replay to it carries the stored body.
TEST_F(ClientFramingE2E, Http10ClientsGetLengthFramedAnswersAndTheConnectionClosed) {
  StartGateway();
  const auto exchange = [this](const std::string& request) {
    RawConnection c(port_);
    EXPECT_TRUE(c.Write(request));
    std::string rest;
    const std::vector<RawAnswer> answers = Answers(c.ReadUntilClosed(milliseconds(10000)), &rest);
    EXPECT_TRUE(c.closed()) << "the connection was kept open";
    EXPECT_EQ(answers.size(), 1u) << rest;
    EXPECT_EQ(rest, "");
    const RawAnswer a = answers.empty() ? RawAnswer{} : answers[0];
    EXPECT_FALSE(a.Has("chunked")) << a.head;
    EXPECT_FALSE(a.Has("keep-alive")) << a.head;
    return a;
  };
  const std::string post = PostHead("old-client", Length(kBody.size()), "HTTP/1.0") + kBody;
  const RawAnswer first = exchange(post);
  EXPECT_EQ(first.head.substr(9, 3), "201") << first.head;
  const RawAnswer replay = exchange(post);
  EXPECT_EQ(replay.head.substr(9, 3), "201") << replay.head;
  EXPECT_TRUE(replay.Has("\r\nidempotent-replayed: true")) << replay.head;
  EXPECT_EQ(replay.body, first.body);
  const RawAnswer stats = exchange("GET /stats HTTP/1.0\r\n\r\n");  // passed through
  EXPECT_EQ(stats.head.substr(9, 3), "200") << stats.head;
  EXPECT_EQ(JsonNumber(stats.body, "calls"), 1) << stats.body;
  // Asked for, a connection is kept: each answer says so, but for the last one's.
  RawConnection c(port_);
  const std::string keep = "Connection: keep-alive\r\n";
  ASSERT_TRUE(c.Write("GET /stats HTTP/1.0\r\n" + keep + "\r\n" +
                      PostHead("old-client", keep + Length(kBody.size()), "HTTP/1.0") + kBody +
                      "GET /stats HTTP/1.0\r\n\r\n"));
  std::string rest;
  const std::vector<RawAnswer> kept = Answers(c.ReadUntilClosed(milliseconds(10000)), &rest);
  EXPECT_TRUE(c.closed());
  ASSERT_EQ(kept.size(), 3u) << rest;
  for (size_t i = 0; i < kept.size(); ++i) {
    EXPECT_EQ(kept[i].Has("connection: keep-alive"), i < 2) << i << ": " << kept[i].head;
    EXPECT_FALSE(kept[i].Has("chunked")) << i << ": " << kept[i].head;
  }
  EXPECT_TRUE(kept[1].Has("\r\nidempotent-replayed: true")) << kept[1].head;
  EXPECT_EQ(kept[1].body, first.body);
}

// Pipelined requests, guarded and passed through, are each answered once and in the order sent:
// each GET /stats counts the POSTs the upstream saw before it.
TEST_F(ClientFramingE2E, PipelinedGuardedAndPassedThroughRequestsAreAnsweredInOrder) {
  StartGateway();
  const std::string chunked = "Transfer-Encoding: chunked\r\n";
  const std::string chunks = "5\r\n" + kBody.substr(0, 5) + "\r\n" + Hex(kBody.size() - 5) +
                             "\r\n" + kBody.substr(5) + "\r\n0\r\n\r\n";
  const std::string stats = "GET /stats HTTP/1.1\r\nHost: x\r\n\r\n";
  RawConnection c(port_);
  ASSERT_TRUE(c.Write(PostHead("piped", chunked) + chunks + stats + PostHead("", chunked) +
                      chunks + PostHead("piped", Length(kBody.size())) + kBody +
                      "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  std::string rest;
  const std::vector<RawAnswer> answers = Answers(c.ReadUntilClosed(milliseconds(10000)), &rest);
  EXPECT_TRUE(c.closed());
  ASSERT_EQ(answers.size(), 5u) << rest;
  EXPECT_EQ(rest, "");
  const std::vector<std::string> statuses = {"201", "200", "201", "201", "200"};
  for (size_t i = 0; i < answers.size(); ++i)
    EXPECT_EQ(answers[i].head.substr(9, 3), statuses[i]) << i << ": " << answers[i].head;
  EXPECT_EQ(JsonNumber(answers[1].body, "calls"), 1) << answers[1].body;
  EXPECT_FALSE(answers[2].Has("idempotent-replayed")) << answers[2].head;
  EXPECT_TRUE(answers[3].Has("\r\nidempotent-replayed: true")) << answers[3].head;
  EXPECT_EQ(answers[3].body, answers[0].body);
  EXPECT_EQ(JsonNumber(answers[4].body, "calls"), 2) << answers[4].body;
}

}  // namespace
}  // namespace idem::e2e
