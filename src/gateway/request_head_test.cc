#include "gateway/request_head.h"

#include <gtest/gtest.h>

#include <string>

namespace idem::gateway {
namespace {

// AmbiguousFraming of the head `text` (a request's header block) as the gateway's parser reads it.
absl::Status FramingOf(const std::string& text) {
  http::request_parser<http::empty_body> parser;
  parser.body_limit(boost::none);
  beast::error_code ec;
  parser.put(asio::buffer(text), ec);
  EXPECT_TRUE(!ec || ec == http::error::need_more) << ec.message() << "\n" << text;
  return AmbiguousFraming(parser);
}

TEST(NormalPath, DecodesUnreservedCharactersAndRemovesDotSegments) {
  EXPECT_EQ(NormalPath("/charges"), "/charges");
  EXPECT_EQ(NormalPath("/%63harges"), "/charges");
  EXPECT_EQ(NormalPath("/x/../charges"), "/charges");
  EXPECT_EQ(NormalPath("/a/./b/"), "/a/b/");
  EXPECT_EQ(NormalPath("/%2E%2E/%2e%2e/charges"), "/charges");  // dots spelt as escapes
  EXPECT_EQ(NormalPath("/../../charges"), "/charges");           // never above the root
  EXPECT_EQ(NormalPath("/a/b/.."), "/a/");
  EXPECT_EQ(NormalPath("/a/."), "/a/");
}

TEST(NormalPath, KeepsReservedEscapesAndMalformedPercentSigns) {
  EXPECT_EQ(NormalPath("/a%2Fb"), "/a%2Fb");  // an escaped "/" is not a segment boundary
  EXPECT_EQ(NormalPath("/a%20b"), "/a%20b");
  EXPECT_EQ(NormalPath("/100%"), "/100%");
  EXPECT_EQ(NormalPath("/%zz"), "/%zz");
  EXPECT_EQ(NormalPath("/"), "/");
}

TEST(ToOriginForm, RewritesAbsoluteFormAndNormalisesOnlyWhatNeedsIt) {
  http::request_header<> h;
  h.method(http::verb::post);
  h.target("http://example.test/charges?x=1");
  ASSERT_TRUE(ToOriginForm(h).ok());
  EXPECT_EQ(h.target(), "/charges?x=1");
  h.target("HTTPS://example.test");
  ASSERT_TRUE(ToOriginForm(h).ok());
  EXPECT_EQ(h.target(), "/");
  h.target("/x/../charges?a=/../b");  // the query is not a path
  ASSERT_TRUE(ToOriginForm(h).ok());
  EXPECT_EQ(h.target(), "/charges?a=/../b");
}

TEST(ToOriginForm, RefusesTargetsThatAreNotPathsSayingHowToSendThem) {
  http::request_header<> h;
  h.method(http::verb::post);
  for (const char* target : {"charges", "ftp://example.test/charges", "*"}) {
    h.target(target);
    const absl::Status s = ToOriginForm(h);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << target;
    EXPECT_NE(s.message().find("/path?query"), std::string_view::npos) << s;
  }
  h.method(http::verb::options);
  h.target("*");
  EXPECT_TRUE(ToOriginForm(h).ok());
}

TEST(AmbiguousFraming, RefusesTransferCodingsNotEndingInOneChunkedAndOnHttp10) {
  EXPECT_TRUE(FramingOf("POST / HTTP/1.1\r\nContent-Length: 2\r\n\r\n").ok());
  EXPECT_TRUE(
      FramingOf("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n").ok());
  for (const char* te : {"gzip", "chunked, gzip"}) {
    const std::string head = std::string("POST / HTTP/1.1\r\nTransfer-Encoding: ") + te + "\r\n\r\n";
    EXPECT_EQ(FramingOf(head).code(), absl::StatusCode::kInvalidArgument) << te;
  }
  EXPECT_EQ(
      FramingOf("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n").code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(GuardableCoding, OnlyChunkedOrNoTransferCodingCanBeGuarded) {
  http::request_header<> h;
  EXPECT_TRUE(GuardableCoding(h).ok());
  h.set(http::field::transfer_encoding, "chunked");
  EXPECT_TRUE(GuardableCoding(h).ok());
  h.set(http::field::transfer_encoding, "gzip, chunked");
  const absl::Status s = GuardableCoding(h);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(s.message().find("'gzip'"), std::string_view::npos) << s;
}

}  // namespace
}  // namespace idem::gateway
