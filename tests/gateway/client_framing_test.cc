// End-to-end: how `idem serve` reads a client's HTTP/1.1 framing (docs/gateway.md "What happens to
// a request"). A request whose body length two parsers could read differently (request smuggling)
// is refused before anything is forwarded; Expect: 100-continue is answered before the body is
// sent.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

using std::chrono::milliseconds;

// One answer cut from the bytes of a connection, framed by its Content-Length.
struct RawAnswer {
  std::string head;  // status line and header fields, without the blank line
  std::string body;
  bool Has(const std::string& text) const {
    std::string lower = head;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return lower.find(text) != std::string::npos;
  }
};

// Splits `bytes` into the Content-Length-framed answers it holds; bytes that do not make a whole
// answer (or one without Content-Length) end the list and are returned in `rest`.
std::vector<RawAnswer> Answers(const std::string& bytes, std::string* rest = nullptr) {
  std::vector<RawAnswer> out;
  size_t at = 0;
  for (;;) {
    const size_t end = bytes.find("\r\n\r\n", at);
    if (end == std::string::npos) break;
    RawAnswer a{.head = bytes.substr(at, end - at), .body = ""};
    std::string lower = a.head;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
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

}  // namespace
}  // namespace idem::e2e
