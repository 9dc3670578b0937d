#include "gateway/request_decision.h"

#include <gtest/gtest.h>

#include "idem/fingerprint.h"

namespace idem::gateway {
namespace {

using Kind = HeadDecision::Kind;

RequestView View(std::string_view method, std::string_view target,
                 const std::vector<Header>& headers, std::string_view body = "") {
  return {.method = method, .target = target, .headers = &headers, .body = body};
}

TEST(DecideHead, PostWithKeyIsGuarded) {
  GatewayConfig config;
  std::vector<Header> h = {{"Idempotency-Key", "\"abc\""}};
  EXPECT_EQ(DecideHead(config, View("POST", "/charges", h)).kind, Kind::kGuard);
  EXPECT_EQ(DecideHead(config, View("PATCH", "/charges/1", h)).kind, Kind::kGuard);
}

TEST(DecideHead, OtherMethodsPassThroughEvenWithKey) {
  GatewayConfig config;
  std::vector<Header> h = {{"Idempotency-Key", "abc"}};
  for (const char* m : {"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})
    EXPECT_EQ(DecideHead(config, View(m, "/x", h)).kind, Kind::kPassThrough) << m;
}

TEST(DecideHead, PostWithoutKeyPassesThroughUnlessRequired) {
  GatewayConfig config;
  std::vector<Header> none;
  EXPECT_EQ(DecideHead(config, View("POST", "/x", none)).kind, Kind::kPassThrough);
  config.require_key = true;
  HeadDecision d = DecideHead(config, View("POST", "/x", none));
  EXPECT_EQ(d.kind, Kind::kReject);
  EXPECT_EQ(d.error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(d.error.message().find("Idempotency-Key"), std::string_view::npos);
}

TEST(DecideHead, HeaderNameMatchesInAnyCase) {
  GatewayConfig config;
  std::vector<Header> h = {{"idempotency-key", "abc"}};
  EXPECT_EQ(DecideHead(config, View("POST", "/x", h)).kind, Kind::kGuard);
}

TEST(DecideHead, MalformedKeysAreRefused) {
  GatewayConfig config;
  for (const char* bad : {"", "\"\"", "\"a b\"", "\"unterminated", "caf\xC3\xA9", "a;b=1"}) {
    std::vector<Header> h = {{"Idempotency-Key", bad}};
    HeadDecision d = DecideHead(config, View("POST", "/x", h));
    EXPECT_EQ(d.kind, Kind::kReject) << bad;
    EXPECT_EQ(d.error.code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  std::vector<Header> too_long = {{"Idempotency-Key", std::string(256, 'k')}};
  EXPECT_EQ(DecideHead(config, View("POST", "/x", too_long)).kind, Kind::kReject);
}

TEST(DecideHead, DuplicateOrListValuedKeyHeaderIsRefused) {
  GatewayConfig config;
  std::vector<Header> twice = {{"Idempotency-Key", "a"}, {"idempotency-key", "a"}};
  HeadDecision d = DecideHead(config, View("POST", "/x", twice));
  EXPECT_EQ(d.kind, Kind::kReject);
  EXPECT_NE(d.error.message().find("2 times"), std::string_view::npos);
  std::vector<Header> list = {{"Idempotency-Key", "\"a\", \"b\""}};
  EXPECT_EQ(DecideHead(config, View("POST", "/x", list)).kind, Kind::kReject);
}

TEST(DecideHead, RoutesChooseMethodsPrefixAndKeyHeader) {
  GatewayConfig config;
  config.routes = {{.methods = {"POST"},
                    .path_prefix = "/webhooks",
                    .key_required = true,
                    .key_header = "webhook-id"},
                   {.methods = {"PUT"}, .path_prefix = "/items"}};
  std::vector<Header> hook = {{"webhook-id", "msg_1"}};
  EXPECT_EQ(DecideHead(config, View("POST", "/webhooks/in", hook)).kind, Kind::kGuard);
  std::vector<Header> plain = {{"Idempotency-Key", "k"}};
  EXPECT_EQ(DecideHead(config, View("POST", "/webhooks/in", plain)).kind, Kind::kReject);
  EXPECT_EQ(DecideHead(config, View("PUT", "/items/1", plain)).kind, Kind::kGuard);
  EXPECT_EQ(DecideHead(config, View("POST", "/items/1", plain)).kind, Kind::kPassThrough);
}

TEST(DecideHead, BodyKeyRouteIsGuardedBeforeTheBodyIsRead) {
  GatewayConfig config;
  config.routes = {{.key_source = KeySource::kJsonPointer, .key_pointer = "/id"}};
  std::vector<Header> none;
  EXPECT_EQ(DecideHead(config, View("POST", "/x", none)).kind, Kind::kGuard);
}

TEST(DecideGuarded, ScopeAndFingerprintFromTheRequest) {
  GatewayConfig config;
  std::vector<Header> h = {{"Idempotency-Key", "\"k-1\""}};
  auto g = DecideGuarded(config, *FindRoute(config, "POST", "/c"), View("POST", "/c?x=1", h, "{}"));
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_TRUE(g->has_value());
  EXPECT_EQ((*g)->scope.key, "k-1");
  EXPECT_EQ((*g)->scope.tenant, "");
  EXPECT_EQ((*g)->fingerprint, Fingerprint({.method = "POST", .target = "/c?x=1", .body = "{}"}));
}

TEST(DecideGuarded, JsonBodiesAreCanonicalisedOthersHashedByBytes) {
  GatewayConfig config;
  const Route& route = *FindRoute(config, "POST", "/c");
  std::vector<Header> h = {{"Idempotency-Key", "k"}};
  auto fp = [&](std::string_view body) {
    return (*DecideGuarded(config, route, View("POST", "/c", h, body)))->fingerprint;
  };
  EXPECT_EQ(fp("{\"a\":1,\"b\":2}"), fp("{ \"b\" : 2, \"a\" : 1.0 }"));
  EXPECT_NE(fp("{\"a\":1"), fp("{\"a\": 1"));  // bad JSON: by bytes, not refused
  EXPECT_NE(fp("{}"), fp("[]"));
}

TEST(DecideGuarded, TenantFromHeaderElseAuthorizationHashElseGlobal) {
  GatewayConfig config;
  config.tenant_header = "X-Tenant";
  const Route& route = *FindRoute(config, "POST", "/c");
  std::vector<Header> t = {{"Idempotency-Key", "k"}, {"x-tenant", "acme"}};
  EXPECT_EQ((*DecideGuarded(config, route, View("POST", "/c", t)))->scope.tenant, "acme");
  std::vector<Header> a = {{"Idempotency-Key", "k"}, {"Authorization", "Bearer s3cret"}};
  const std::string tenant = (*DecideGuarded(config, route, View("POST", "/c", a)))->scope.tenant;
  EXPECT_EQ(tenant, "auth:" + Sha256Hex("Bearer s3cret"));
  std::vector<Header> none = {{"Idempotency-Key", "k"}};
  EXPECT_EQ((*DecideGuarded(config, route, View("POST", "/c", none)))->scope.tenant, "");
  std::vector<Header> dup = {{"Idempotency-Key", "k"}, {"X-Tenant", "a"}, {"X-Tenant", "b"}};
  EXPECT_EQ(DecideGuarded(config, route, View("POST", "/c", dup)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Regression: a tenant header could name a credential's scope ("auth:" and the SHA-256 of another
// client's Authorization) or the global one (an empty value) and get its stored answers.
TEST(TenantOf, NoTenantHeaderValueNamesAnotherSourcesTenant) {
  GatewayConfig config;
  config.tenant_header = "X-Tenant";
  const auto tenant = [&](std::vector<Header> headers) { return *TenantOf(config, headers); };
  const std::string victim = "auth:" + Sha256Hex("Bearer sk_victim");
  EXPECT_EQ(tenant({{"Authorization", "Bearer sk_victim"}}), victim);
  EXPECT_EQ(tenant({{"X-Tenant", victim}}), "header:" + victim);
  EXPECT_EQ(tenant({}), "");
  EXPECT_EQ(tenant({{"X-Tenant", ""}}), "header:");
  // An escaped name cannot be reached by another value: "header:" is escaped too.
  EXPECT_EQ(tenant({{"X-Tenant", "header:"}}), "header:header:");
  EXPECT_EQ(tenant({{"X-Tenant", "header:auth:x"}}), "header:header:auth:x");
  // Every other value is its own name, as before namespaces, so stored keys keep their scope.
  for (const char* same : {"acme", "Auth:x", "auth", "x-header:y", "acme:auth:1"})
    EXPECT_EQ(tenant({{"X-Tenant", same}}), same);
}

TEST(DecideGuarded, KeyFromJsonPointer) {
  GatewayConfig config;
  config.routes = {{.key_source = KeySource::kJsonPointer, .key_pointer = "/event/id"}};
  const Route& route = config.routes[0];
  std::vector<Header> none;
  auto g = DecideGuarded(config, route, View("POST", "/", none, "{\"event\":{\"id\":\"ev_1\"}}"));
  ASSERT_TRUE(g.ok() && g->has_value());
  EXPECT_EQ((*g)->scope.key, "ev_1");
  auto absent = DecideGuarded(config, route, View("POST", "/", none, "{\"event\":{}}"));
  ASSERT_TRUE(absent.ok());
  EXPECT_FALSE(absent->has_value());  // optional key: passes through
  EXPECT_EQ(DecideGuarded(config, route, View("POST", "/", none, "{\"event\":{\"id\":7}}"))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  config.routes[0].key_required = true;
  EXPECT_EQ(
      DecideGuarded(config, config.routes[0], View("POST", "/", none, "not json")).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(FormatKeyHeader, QuotesAndEscapes) {
  EXPECT_EQ(FormatKeyHeader("abc"), "\"abc\"");
  EXPECT_EQ(FormatKeyHeader("a\"b\\c"), "\"a\\\"b\\\\c\"");
}

}  // namespace
}  // namespace idem::gateway
