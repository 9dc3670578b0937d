// The command-line rules of `idem call` (src/cli/call_options.cc), checked without a process.
#include "cli/call_options.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

namespace idem::cli {
namespace {

CallFlags Flags(const std::string& url) {
  CallFlags f;
  f.url = url;
  return f;
}

const std::string* Header(const CallPlan& plan, const std::string& name) {
  for (const auto& [n, v] : plan.request.headers) {
    if (n == name) return &v;
  }
  return nullptr;
}

TEST(MakeCallPlan, UrlIsSplitForTheClient) {
  CallPlan plan = *MakeCallPlan(Flags("https://[::1]:9443/orders?x=1"));
  EXPECT_TRUE(plan.request.url.origin.tls());
  EXPECT_EQ(plan.request.url.origin.host, "::1");
  EXPECT_EQ(plan.request.url.origin.port, 9443);
  EXPECT_EQ(plan.request.url.target, "/orders?x=1");
  EXPECT_EQ(plan.request.url.authority, "[::1]:9443");
}

TEST(MakeCallPlan, OtherSchemesNonUrlsAndBadPortsAreRefused) {
  for (const char* bad : {"ftp://a/", "127.0.0.1:8080/x", "not a url", "http:///x",
                          "http://user:pw@a/", "http://a:99999/", "http://a:0/", "http://a:x/"}) {
    EXPECT_EQ(MakeCallPlan(Flags(bad)).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(MakeCallPlan, DataMakesAPostWithAGeneratedQuotedKey) {
  CallFlags f = Flags("http://a/");
  f.data = "x=1";
  CallPlan plan = *MakeCallPlan(f);
  EXPECT_EQ(plan.request.method, "POST");
  ASSERT_TRUE(plan.key.has_value());
  EXPECT_TRUE(plan.key_generated);
  EXPECT_EQ(*Header(plan, "Idempotency-Key"), "\"" + *plan.key + "\"");
  EXPECT_EQ(*Header(plan, "Content-Type"), "application/x-www-form-urlencoded");
}

TEST(MakeCallPlan, GetAndNoKeyPostCarryNoKey) {
  EXPECT_FALSE(MakeCallPlan(Flags("http://a/"))->key.has_value());
  CallFlags f = Flags("http://a/");
  f.method = "post";
  f.no_key = true;
  CallPlan plan = *MakeCallPlan(f);
  EXPECT_EQ(plan.request.method, "POST");
  EXPECT_FALSE(plan.key.has_value());
  EXPECT_EQ(Header(plan, "Idempotency-Key"), nullptr);
}

TEST(MakeCallPlan, KeyGivenAsHeaderIsUsedAsWritten) {
  CallFlags f = Flags("http://a/");
  f.method = "POST";
  f.headers = {"idempotency-key: abc"};
  CallPlan plan = *MakeCallPlan(f);
  EXPECT_EQ(*plan.key, "abc");
  EXPECT_FALSE(plan.key_generated);
  EXPECT_EQ(plan.request.headers.size(), 1u);
}

TEST(MakeCallPlan, RetriesBecomeAttemptsAndDurationsAreParsed) {
  CallFlags f = Flags("http://a/");
  f.retries = 0;
  f.deadline = "1m30s";
  f.timeout = "250ms";
  f.backoff = "decorrelated";
  CallPlan plan = *MakeCallPlan(f);
  EXPECT_EQ(plan.policy.max_attempts, 1);
  EXPECT_EQ(plan.policy.deadline, Millis(90'000));
  EXPECT_EQ(plan.policy.attempt_timeout, Millis(250));
  EXPECT_EQ(plan.backoff.jitter, retry::Jitter::kDecorrelated);
}

TEST(MakeCallPlan, RejectsHeaderInjectionAndBadMethods) {
  CallFlags f = Flags("http://a/");
  f.headers = {"X-A: 1\r\nX-B: 2"};
  EXPECT_EQ(MakeCallPlan(f).status().code(), absl::StatusCode::kInvalidArgument);
  f = Flags("http://a/");
  f.method = "GET /evil";
  EXPECT_EQ(MakeCallPlan(f).status().code(), absl::StatusCode::kInvalidArgument);
  f = Flags("http://a/");
  f.breaker_failures = -1;
  EXPECT_EQ(MakeCallPlan(f).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MakeCallPlan, DataFromAFileIsReadWhole) {
  char path[] = "/tmp/idem_call_options_test_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  const std::string body = std::string("{\"a\":1}\n") + std::string(1, '\0') + "tail";
  ASSERT_EQ(write(fd, body.data(), body.size()), static_cast<ssize_t>(body.size()));
  close(fd);
  CallFlags f = Flags("http://a/");
  f.data = std::string("@") + path;
  CallPlan plan = *MakeCallPlan(f);
  std::remove(path);
  EXPECT_EQ(plan.request.body, body);
  EXPECT_TRUE(plan.request.has_body);
}

TEST(QuoteKey, EscapesQuoteAndBackslash) {
  EXPECT_EQ(QuoteKey("abc"), "\"abc\"");
  EXPECT_EQ(QuoteKey("a\"b\\c"), "\"a\\\"b\\\\c\"");
}

}  // namespace
}  // namespace idem::cli
