// End-to-end: an upstream that answers bytes that are not HTTP: the client gets 502
// application/problem+json, nothing is stored and the key is released: the retry runs. One that
// ran the request but whose answer cannot be kept (cut off after its head, or larger than the
// stored-answer limit): a 502 upstream-answer-not-kept is recorded, and every retry gets it.
// And upstreams at the edges of HTTP/1.1 (ScriptedUpstream): interim 1xx answers, answers without
// a body by rule, close-delimited bodies, idle keep-alive connections the upstream closes.
#include <atomic>

#include "gateway_fixture.h"
#include "scripted_upstream.h"

namespace idem::e2e {
namespace {

using Reply = ScriptedUpstream::Reply;

// The request target in a request head ("GET /x HTTP/1.1\r\n...").
std::string TargetOf(const std::string& head) {
  const size_t from = head.find(' ') + 1;
  return head.substr(from, head.find(' ', from) - from);
}

class E2E_SUITE(BrokenUpstreamE2E) : public GatewayFixture {};
#define BrokenUpstreamE2E E2E_SUITE(BrokenUpstreamE2E)

// The upstream ran the request and its answer was cut off after its head: releasing the key would
// run the request again on the next retry (as the old code did). The key records a 502 of its
// own type instead, which every retry gets.
TEST_F(BrokenUpstreamE2E, AnAnswerCutOffAfterItsHeadIs502RecordedAndRetriesGetIt) {
  StartGateway();
  const Response cut = Post("order-c", kBody, {{"X-Charges-Break", "close"}});
  ExpectProblem(cut, 502);
  EXPECT_NE(cut.body.find("upstream-answer-not-kept"), std::string::npos) << cut.body;
  EXPECT_EQ(Metric("idem_keys_in_flight"), 0);
  const Response retry = Post("order-c");
  EXPECT_EQ(retry.status, 502) << retry.body;
  EXPECT_EQ(retry.body, cut.body);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
}

// An answer larger than the stored-answer limit (16 MiB): the upstream ran the request, so the
// key records the 502 upstream-answer-not-kept, and the retry gets it without a second run.
TEST_F(BrokenUpstreamE2E, AnAnswerLargerThanTheLimitIs502RecordedAndRetriesGetIt) {
  ScriptedUpstream upstream([](const std::string&) {
    return Reply{ScriptedUpstream::Answer("201 Created", std::string((16 << 20) + 1, 'x'))};
  });
  StartGateway({}, upstream.Url());
  const Response big = Post("order-big");
  ExpectProblem(big, 502);
  EXPECT_NE(big.body.find("upstream-answer-not-kept"), std::string::npos) << big.body;
  const Response retry = Post("order-big");
  EXPECT_EQ(retry.status, 502) << retry.body;
  EXPECT_EQ(retry.body, big.body);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(upstream.requests(), 1);
}

// The storm's po-4242-k4: a 500's head reached the gateway just before --upstream-timeout and its
// body after it. The head says the upstream did not finish the request, as the whole 500 would
// have: the key is released (the client gets the 504) and the retry runs, where a 502
// upstream-answer-not-kept recorded for it would refuse every retry for ever.
TEST_F(BrokenUpstreamE2E, ATransientHeadWhoseBodyIsTooSlowReleasesTheKeyAndTheRetryRuns) {
  std::atomic<int> seen{0};
  ScriptedUpstream upstream([&](const std::string&) {
    if (seen++ == 0)  // a head promising 64 bytes, 2 of them sent: the rest never comes
      return Reply{"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                   "Content-Length: 64\r\n\r\n{\""};
    return Reply{ScriptedUpstream::Answer("201 Created", "{\"ran\":true}")};
  });
  StartGateway({"--upstream-timeout", "1s", "--lease", "10s"}, upstream.Url());
  const Response slow = Post("order-slow-500");
  ExpectProblem(slow, 504);
  EXPECT_EQ(slow.body.find("upstream-answer-not-kept"), std::string::npos) << slow.body;
  EXPECT_EQ(slow.Header("Idempotent-Replayed"), "");
  EXPECT_EQ(Metric("idem_keys_in_flight"), 0);
  const Response retry = Post("order-slow-500");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.body, "{\"ran\":true}");
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "");
  EXPECT_EQ(upstream.requests(), 2);
}

TEST_F(BrokenUpstreamE2E, UpstreamAnsweringGarbageIs502NotStoredKeyReleased) {
  StartGateway();
  const Response bad = Post("order-g", kBody, {{"X-Charges-Break", "garbage"}});
  ExpectProblem(bad, 502);
  EXPECT_NE(bad.body.find("upstream-bad-response"), std::string::npos) << bad.body;
  const Response retry = Post("order-g");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
  // Unguarded requests meet the same upstream: 502 too, and the gateway keeps serving.
  ExpectProblem(Send(port_, "POST", "/charges", {{"X-Charges-Break", "garbage"}}, kBody), 502);
  EXPECT_EQ(Post("order-g").Header("Idempotent-Replayed"), "true");
}

// Interim answers (100 Continue, 103 Early Hints) before the final one are consumed by idem: the
// outcome stored and replayed is the final answer, and a passed-through request's client reads the
// final answer first, its connection usable afterwards.
TEST_F(BrokenUpstreamE2E, InterimAnswersAreConsumedOnlyTheFinalAnswerIsStoredAndRelayed) {
  const std::string body = R"({"id":"ch_1"})";
  ScriptedUpstream upstream([&](const std::string&) {
    return Reply{
        "HTTP/1.1 100 Continue\r\n\r\n"
        "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" +
        ScriptedUpstream::Answer("201 Created", body, "Content-Type: application/json\r\n")};
  });
  StartGateway({}, upstream.Url());
  const Response first = Post("order-1xx");
  EXPECT_EQ(first.status, 201) << first.body << first.error;
  EXPECT_EQ(first.body, body);
  const Response replay = Post("order-1xx");
  EXPECT_EQ(replay.status, 201) << replay.body << replay.error;
  EXPECT_EQ(replay.body, body);
  EXPECT_EQ(replay.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(upstream.requests(), 1);
  const Response through = Send(port_, "GET", "/charges/ch_1");  // reads the first answer only
  EXPECT_EQ(through.status, 201) << through.body << through.error;
  EXPECT_EQ(through.body, body);
  KeepAliveClient client(port_);
  for (int i = 0; i < 2; ++i) {
    const Response r = client.Send("POST", "/charges", {}, kBody);
    EXPECT_EQ(r.status, 201) << "request " << i << ": " << r.error;
    EXPECT_EQ(r.body, body);
  }
}

// 204 and 304 have no body whatever their Content-Length says, nor has the answer to a HEAD: each
// ends where its header ends, guarded or passed through, and the client's connection and the
// upstream connection both carry the next request (no waiting for a body until a timeout).
TEST_F(BrokenUpstreamE2E, AnswersWithoutABodyByRuleEndWithTheirHeaderAndKeepConnectionsUsable) {
  ScriptedUpstream upstream([](const std::string& head) {
    const std::string target = TargetOf(head);
    if (target == "/no-content") return Reply{"HTTP/1.1 204 No Content\r\n\r\n"};
    if (target == "/no-content-length")
      return Reply{"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"};
    if (target == "/not-modified")
      return Reply{"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 42\r\n\r\n"};
    if (target == "/not-modified-bare")
      return Reply{"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\n\r\n"};
    return Reply{"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n"};
  });
  StartGateway({}, upstream.Url());
  KeepAliveClient client(port_);
  auto guarded = [&](const std::string& key, const std::string& target) {
    return client.Send("POST", target,
                       {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, kBody);
  };
  const struct {
    const char* what;
    Response r;
    int status;
  } answers[] = {
      {"guarded 204", guarded("order-204", "/no-content"), 204},
      {"guarded 204 with Content-Length", guarded("order-204-cl", "/no-content-length"), 204},
      {"guarded 304 with Content-Length", guarded("order-304", "/not-modified"), 304},
      {"passed through 204", client.Send("GET", "/no-content"), 204},
      {"passed through 304 with Content-Length", client.Send("GET", "/not-modified"), 304},
      {"passed through 304", client.Send("GET", "/not-modified-bare"), 304},
      {"passed through HEAD", client.Send("HEAD", "/file"), 200},
      {"replayed 204", guarded("order-204", "/no-content"), 204},
      {"replayed 304", guarded("order-304", "/not-modified"), 304},
  };
  for (const auto& a : answers) {
    EXPECT_EQ(a.r.status, a.status) << a.what << ": " << a.r.error;
    EXPECT_EQ(a.r.body, "") << a.what;
  }
  EXPECT_EQ(answers[6].r.Header("Content-Length"), "1000");
  EXPECT_EQ(answers[4].r.Header("ETag"), "\"v1\"");
  EXPECT_EQ(answers[8].r.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(upstream.requests(), 7);
  EXPECT_EQ(upstream.connections(), 1) << "the upstream connection was not kept usable";
}

// A body without Content-Length or chunked framing ends when the upstream closes the connection.
// Guarded, it is stored whole and replayed byte for byte; passed through, the client gets all of it
// and then the end of the connection (nothing else can tell it where the body ends), without
// waiting for a timeout. The upstream's connection ends with the body, so it is never reused.
TEST_F(BrokenUpstreamE2E, ACloseDelimitedAnswerIsStoredWholeAndRelayedWhole) {
  std::string body;
  for (int i = 0; body.size() < 100'000; ++i) body += "line " + std::to_string(i) + "\n";
  ScriptedUpstream upstream([&](const std::string&) {
    return Reply{"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n" + body, true};
  });
  StartGateway({}, upstream.Url());
  const Response first = Post("order-eof");
  EXPECT_EQ(first.status, 200) << first.error;
  EXPECT_TRUE(first.body == body) << first.body.size() << " bytes of " << body.size();
  const Response replay = Post("order-eof");
  EXPECT_EQ(replay.status, 200) << replay.error;
  EXPECT_TRUE(replay.body == body) << replay.body.size() << " bytes of " << body.size();
  EXPECT_EQ(replay.Header("Idempotent-Replayed"), "true");
  KeepAliveClient client(port_);
  const Response through = client.Send("GET", "/report");
  EXPECT_EQ(through.status, 200) << through.error;
  EXPECT_TRUE(through.body == body) << through.body.size() << " bytes of " << body.size();
  EXPECT_EQ(through.Header("Connection"), "close");
  EXPECT_EQ(Send(port_, "GET", "/report").body.size(), body.size());
  EXPECT_EQ(upstream.requests(), 3);
  EXPECT_EQ(upstream.connections(), 3);
}

// An upstream closes a keep-alive connection that idled in idem's pool past its own keep-alive
// timeout. The next request must not be lost to it: the pool peeks at an idle connection before
// lending it out and sees the upstream's close (the FIN has long arrived), so the request goes
// out on a fresh connection: no 502, the key is not lost. (Were the close to cross a guarded
// request on the wire, that request would get 502: its bytes may have reached the upstream, and
// idem never sends a guarded request twice by itself; see the next test.)
TEST_F(BrokenUpstreamE2E, AnUpstreamClosingIdleConnectionsLosesNoRequest) {
  ScriptedUpstream upstream(
      [](const std::string&) { return Reply{ScriptedUpstream::Answer("201 Created", "{}")}; },
      std::chrono::milliseconds(100));
  StartGateway({}, upstream.Url());
  KeepAliveClient client(port_);  // one client connection: one io thread's pool
  auto post = [&](const std::string& key) {
    return client.Send("POST", "/charges",
                       {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, kBody);
  };
  EXPECT_EQ(post("order-idle-1").status, 201);
  ASSERT_TRUE(Eventually([&] { return upstream.idle_closes() == 1; }));
  const Response second = post("order-idle-2");
  EXPECT_EQ(second.status, 201) << second.body << second.error;
  ASSERT_TRUE(Eventually([&] { return upstream.idle_closes() == 2; }));
  const Response through = client.Send("GET", "/charges");
  EXPECT_EQ(through.status, 201) << through.body << through.error;
  EXPECT_EQ(upstream.requests(), 3);
  EXPECT_EQ(upstream.connections(), 3);
}

// An upstream that reads a guarded request on a kept-alive connection, runs its effect and drops
// the connection before answering: the request may have had its effect, so idem never sends it
// again by itself (only the client may retry, with its key). One execution, and the client gets
// 502 with the key released.
TEST_F(BrokenUpstreamE2E, AGuardedRequestDroppedUnansweredOnAKeptAliveConnectionIsNotResent) {
  std::atomic<int> effects{0};
  ScriptedUpstream upstream([&](const std::string& head) {
    if (TargetOf(head) != "/charges/drop")
      return Reply{ScriptedUpstream::Answer("201 Created", "{}")};
    ++effects;  // the effect runs, then the connection is dropped without an answer
    return Reply{"", true};
  });
  StartGateway({}, upstream.Url());
  KeepAliveClient client(port_);  // one client connection: one io thread's upstream pool
  auto post = [&](const std::string& key, const std::string& target) {
    return client.Send("POST", target,
                       {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, kBody);
  };
  ASSERT_EQ(post("order-keep-1", "/charges").status, 201);  // leaves a kept-alive connection
  const Response dropped = post("order-keep-2", "/charges/drop");
  ExpectProblem(dropped, 502);
  EXPECT_EQ(effects.load(), 1) << "the gateway sent the guarded request again by itself";
  EXPECT_EQ(upstream.requests(), 2);
  EXPECT_EQ(upstream.connections(), 1);
  EXPECT_EQ(Metric("idem_keys_in_flight"), 0);
}

// An upstream that answers Connection: close every time: every request is served on a fresh
// upstream connection, none gets 502, and the client's own connection is not closed for it
// (Connection is hop by hop: it speaks of the upstream's connection only).
TEST_F(BrokenUpstreamE2E, AnUpstreamClosingAfterEveryAnswerServesEveryRequest) {
  ScriptedUpstream upstream([](const std::string&) {
    return Reply{ScriptedUpstream::Answer("201 Created", "{}", "Connection: close\r\n"), true};
  });
  StartGateway({}, upstream.Url());
  KeepAliveClient client(port_);
  for (int i = 0; i < 3; ++i) {
    const Response guarded = client.Send("POST", "/charges",
                                         {{"Idempotency-Key", "order-close-" + std::to_string(i)},
                                          {"Content-Type", "application/json"}},
                                         kBody);
    EXPECT_EQ(guarded.status, 201) << guarded.body << guarded.error;
    const Response through = client.Send("GET", "/charges");
    EXPECT_EQ(through.status, 201) << through.body << through.error;
    EXPECT_EQ(through.HeaderCount("Connection"), 0) << through.Header("Connection");
  }
  EXPECT_EQ(upstream.requests(), 6);
}

// An upstream that switches protocols (101; idem never forwards a client's Upgrade, so never
// unasked) would speak another protocol after it, which idem does not relay: 502
// upstream-bad-response at once, guarded (the key released) or passed through, never a 101
// relayed nor a wait for an HTTP answer until the timeout.
TEST_F(BrokenUpstreamE2E, AnUpstreamSwitchingProtocolsIs502AtOnce) {
  std::atomic<int> switches{0};  // the first two requests: then the retry is answered
  ScriptedUpstream upstream([&](const std::string&) {
    if (++switches <= 2)
      return Reply{
          "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
          "\x81\x05hello"};
    return Reply{ScriptedUpstream::Answer("201 Created", "{}")};
  });
  StartGateway({}, upstream.Url());
  const Response through = Send(port_, "GET", "/switch");
  ExpectProblem(through, 502);
  EXPECT_NE(through.body.find("upstream-bad-response"), std::string::npos) << through.body;
  const Response guarded = Post("order-switch", kBody, {}, "/switch");
  ExpectProblem(guarded, 502);
  EXPECT_NE(guarded.body.find("upstream-bad-response"), std::string::npos) << guarded.body;
  EXPECT_EQ(Metric("idem_keys_in_flight"), 0);
  const Response retry = Post("order-switch", kBody, {}, "/switch");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
}

// Bytes an upstream sends past the end of an answer are never taken for the next request's
// answer (the connection they came on is not reused), and an answer whose length is ambiguous
// (Content-Length beside chunked, two different Content-Lengths) is a 502: either could make
// idem and the client disagree where an answer ends.
TEST_F(BrokenUpstreamE2E, AnAnswersExtraBytesAreNeverTheNextAnswerAndAmbiguousLengthIs502) {
  ScriptedUpstream upstream([](const std::string& head) {
    const std::string target = TargetOf(head);
    if (target == "/extra")
      return Reply{ScriptedUpstream::Answer("201 Created", "mine") +
                   ScriptedUpstream::Answer("201 Created", "smuggled")};
    if (target == "/te-and-length")
      return Reply{
          "HTTP/1.1 201 Created\r\nContent-Length: 8\r\nTransfer-Encoding: chunked\r\n\r\n"
          "0\r\n\r\n"};
    if (target == "/two-lengths")
      return Reply{"HTTP/1.1 201 Created\r\nContent-Length: 2\r\nContent-Length: 4\r\n\r\nokok"};
    return Reply{ScriptedUpstream::Answer("201 Created", target)};
  });
  StartGateway({}, upstream.Url());
  KeepAliveClient client(port_);
  auto guarded = [&](const std::string& key, const std::string& target) {
    return client.Send("POST", target,
                       {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, kBody);
  };
  EXPECT_EQ(guarded("order-extra", "/extra").body, "mine");
  EXPECT_EQ(guarded("order-next", "/next").body, "/next");
  EXPECT_EQ(client.Send("GET", "/extra").body, "mine");
  EXPECT_EQ(client.Send("GET", "/next").body, "/next");
  for (const char* target : {"/te-and-length", "/two-lengths"}) {
    ExpectProblem(Post(std::string("order") + target, kBody, {}, target), 502);
    ExpectProblem(Send(port_, "GET", target), 502);
  }
  EXPECT_EQ(Metric("idem_keys_in_flight"), 0);
}

// An upstream that refuses a request from its head alone (413) and closes without reading the
// body: idem, still sending the body, finds the connection closed, and reads the answer that
// came before the close. Guarded, the 413 is the outcome (stored, replayed); passed through, the
// client gets the 413 and its connection is closed (the rest of its body is not read). Bodies of
// 8 MiB: more than the kernel's buffers take, so the write surely fails.
TEST_F(BrokenUpstreamE2E, AnAnswerSentBeforeTheWholeBodyIsRelayed) {
  ScriptedUpstream upstream([](const std::string& head) {
    if (TargetOf(head) == "/too-big")
      return Reply{.bytes = ScriptedUpstream::Answer("413 Content Too Large", "too big",
                                                     "Connection: close\r\n"),
                   .close = true,
                   .before_body = true};
    return Reply{.bytes = ScriptedUpstream::Answer("201 Created", "{}")};
  });
  StartGateway({"--max-body", "16MiB"}, upstream.Url());
  const std::string big = "{\"pad\":\"" + std::string(8 << 20, 'x') + "\"}";
  const Response guarded = Post("order-big-body", big, {}, "/too-big");
  EXPECT_EQ(guarded.status, 413) << guarded.body << guarded.error;
  EXPECT_EQ(guarded.body, "too big");
  const Response replay = Post("order-big-body", big, {}, "/too-big");
  EXPECT_EQ(replay.status, 413) << replay.body << replay.error;
  EXPECT_EQ(replay.Header("Idempotent-Replayed"), "true");
  const Response through = Send(port_, "PUT", "/too-big", {}, std::string(8 << 20, 'x'));
  EXPECT_EQ(through.status, 413) << through.body << through.error;
  EXPECT_EQ(through.Header("Connection"), "close");
  EXPECT_EQ(Send(port_, "GET", "/next").status, 201);
  EXPECT_EQ(upstream.requests(), 3);
}

// The upstream's hop-by-hop fields (Connection and the fields it names, Keep-Alive) speak of its
// connection to idem: they reach the client neither guarded, nor replayed, nor passed through,
// and its end-to-end fields do. The client's connection carries on.
TEST_F(BrokenUpstreamE2E, TheUpstreamsHopByHopFieldsAreNotRelayed) {
  ScriptedUpstream upstream([](const std::string&) {
    return Reply{.bytes = ScriptedUpstream::Answer(
                     "201 Created", "{}",
                     "Connection: X-Upstream-Private\r\nX-Upstream-Private: 1\r\n"
                     "Keep-Alive: timeout=5, max=100\r\nX-Kept: yes\r\n")};
  });
  StartGateway({}, upstream.Url());
  KeepAliveClient client(port_);
  const Headers key = {{"Idempotency-Key", "order-hop"}, {"Content-Type", "application/json"}};
  const Response answers[] = {client.Send("POST", "/charges", key, kBody),
                              client.Send("POST", "/charges", key, kBody),
                              client.Send("GET", "/charges"), client.Send("GET", "/charges")};
  for (const Response& r : answers) {
    EXPECT_EQ(r.status, 201) << r.error;
    if (&r != &answers[1]) {  // a replay carries fewer fields (Content-Type, Location, ...)
      EXPECT_EQ(r.Header("X-Kept"), "yes");
    }
    EXPECT_EQ(r.HeaderCount("X-Upstream-Private"), 0);
    EXPECT_EQ(r.HeaderCount("Keep-Alive"), 0);
    EXPECT_EQ(r.HeaderCount("Connection"), 0) << r.Header("Connection");
  }
  EXPECT_EQ(answers[1].Header("Idempotent-Replayed"), "true");
}

// A header block over idem's limit (64 KiB), or a status line of another HTTP version: 502
// upstream-bad-response, nothing stored, the key released (the retry runs), guarded or not.
TEST_F(BrokenUpstreamE2E, AnOversizedHeaderOrANonHttp11StatusLineIs502NotStoredKeyReleased) {
  ScriptedUpstream upstream([](const std::string& head) {
    if (head.find("X-Answer: big") != std::string::npos)
      return Reply{ScriptedUpstream::Answer("201 Created", "{}",
                                            "X-Big: " + std::string(70 * 1024, 'b') + "\r\n")};
    if (head.find("X-Answer: http2") != std::string::npos)
      return Reply{"HTTP/2.0 201 Created\r\nContent-Length: 2\r\n\r\n{}"};
    return Reply{ScriptedUpstream::Answer("201 Created", "{}")};
  });
  StartGateway({}, upstream.Url());
  for (const char* answer : {"big", "http2"}) {
    const std::string key = std::string("order-") + answer;
    const Response bad = Post(key, kBody, {{"X-Answer", answer}});
    ExpectProblem(bad, 502);
    EXPECT_NE(bad.body.find("upstream-bad-response"), std::string::npos) << answer << bad.body;
    EXPECT_EQ(Metric("idem_keys_in_flight"), 0);
    const Response retry = Post(key);
    EXPECT_EQ(retry.status, 201) << answer << retry.body;
    EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
    ExpectProblem(Send(port_, "GET", "/charges", {{"X-Answer", answer}}), 502);
  }
  EXPECT_EQ(upstream.requests(), 6);
}

}  // namespace
}  // namespace idem::e2e
