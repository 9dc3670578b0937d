#include "http/url.h"

#include <gtest/gtest.h>

namespace idem::http {
namespace {

TEST(ParseUrl, SplitsAnHttpUrl) {
  absl::StatusOr<Url> u = ParseUrl("http://127.0.0.1:8080/orders?x=1#frag");
  ASSERT_TRUE(u.ok()) << u.status();
  EXPECT_EQ(u->origin.scheme, Scheme::kHttp);
  EXPECT_EQ(u->origin.host, "127.0.0.1");
  EXPECT_EQ(u->origin.port, 8080);
  EXPECT_EQ(u->target, "/orders?x=1");
  EXPECT_EQ(u->authority, "127.0.0.1:8080");
  EXPECT_EQ(u->origin.ToString(), "http://127.0.0.1:8080");
}

TEST(ParseUrl, DefaultPortsFollowTheScheme) {
  EXPECT_EQ(ParseUrl("http://example.com")->origin.port, 80);
  absl::StatusOr<Url> u = ParseUrl("HTTPS://example.com");
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(u->origin.tls());
  EXPECT_EQ(u->origin.port, 443);
  EXPECT_EQ(u->target, "/");
}

TEST(ParseUrl, Ipv6HostLosesItsBrackets) {
  absl::StatusOr<Url> u = ParseUrl("http://[::1]:9000/a");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->origin.host, "::1");
  EXPECT_EQ(u->origin.ToString(), "http://[::1]:9000");
}

TEST(ParseUrl, PortAbove65535IsRefusedNotWrapped) {
  absl::StatusOr<Url> u = ParseUrl("http://127.0.0.1:99999/pay");
  EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(u.status().message().find("1 to 65535"), std::string_view::npos);
  EXPECT_EQ(ParseUrl("http://127.0.0.1:65536/").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://127.0.0.1:4294967297/").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(ParseUrl("http://127.0.0.1:65535/").ok());
}

TEST(ParseUrl, PortZeroOrEmptyIsRefused) {
  EXPECT_EQ(ParseUrl("http://127.0.0.1:0/").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://127.0.0.1:/").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ParseUrl, PortWithLettersIsRefusedNotCutShort) {
  // Boost.URL alone reads "8o8o" as port 8 followed by a path "o8o/pay".
  for (const char* bad : {"http://127.0.0.1:8o8o/pay", "http://h:80x", "http://[::1]:9a/",
                          "http://h:-1/", "http://h:+80/"}) {
    absl::StatusOr<Url> u = ParseUrl(bad);
    EXPECT_EQ(u.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(u.status().message().find("port"), std::string_view::npos) << u.status();
  }
  EXPECT_EQ(ParseUrl("http://u@h:81/").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://h:8080?q=1")->origin.port, 8080);
}

TEST(ParseUrl, OtherSchemesHostlessAndUserInfoAreRefused) {
  EXPECT_EQ(ParseUrl("ftp://h/").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http:///x").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("http://u:p@h/").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseUrl("not a url").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::http
