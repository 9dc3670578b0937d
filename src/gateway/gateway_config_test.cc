#include "gateway/gateway_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace idem::gateway {
namespace {

GatewayConfig Minimal() {
  GatewayConfig c;
  c.listen = "127.0.0.1:8080";
  c.upstream = "http://127.0.0.1:9000";
  c.store = "sqlite:./idem.db";
  return c;
}

TEST(ValidateConfig, DefaultsAreValid) { EXPECT_TRUE(ValidateConfig(Minimal()).ok()); }

TEST(ValidateConfig, UpstreamTimeoutNotShorterThanLeaseIsRefusedSayingWhy) {
  GatewayConfig c = Minimal();
  c.upstream_timeout = c.lease;
  absl::Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("must be shorter than --lease"), std::string_view::npos);
  EXPECT_NE(s.message().find("twice"), std::string_view::npos);
}

TEST(ValidateConfig, AConnectionMustCarryAtLeastOneRequest) {
  GatewayConfig c = Minimal();
  c.max_requests_per_connection = 0;
  absl::Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("max_requests_per_connection must be 1 or more"),
            std::string_view::npos)
      << s;
  c.max_requests_per_connection = 1;
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ValidateConfig, MissingRequiredSettingsAreNamed) {
  GatewayConfig c = Minimal();
  c.store.clear();
  EXPECT_NE(ValidateConfig(c).message().find("--store"), std::string_view::npos);
}

TEST(ValidateConfig, BadRoutesAreRefused) {
  GatewayConfig c = Minimal();
  c.routes = {{.path_prefix = "charges"}};
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c.routes = {{.key_source = KeySource::kJsonPointer, .key_pointer = "id"}};
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c.routes = {{.in_flight = InFlightPolicy::kWait, .wait_max = 0ms}};
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c.routes = {{.final_statuses = {700}}};
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c.routes = {{.methods = {}}};
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
}

TEST(ValidateConfig, AnswerFaultsNeedAllowFaultsNamingTheRouteAndTheFlag) {
  GatewayConfig c = Minimal();
  c.routes = {Route{.path_prefix = "/a"},
              Route{.path_prefix = "/charges", .lose_answer_fraction = 0.25}};
  absl::Status s = ValidateConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("route 2 (/charges): lose_answer_fraction"), std::string_view::npos)
      << s;
  EXPECT_NE(s.message().find("--allow-faults"), std::string_view::npos) << s;
  c.allow_faults = true;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.allow_faults = false;
  c.routes[1] = Route{.path_prefix = "/charges", .delay_answer_fraction = 1, .delay_answer = 2s};
  s = ValidateConfig(c);
  EXPECT_NE(s.message().find("delay_answer_fraction"), std::string_view::npos) << s;
  EXPECT_NE(s.message().find("--allow-faults"), std::string_view::npos) << s;
  // A route without faults needs no flag.
  c.routes.pop_back();
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST(ValidateRoute, AnswerFaultsAreFractionsWithADelay) {
  auto check = [](Route r) { return ValidateRoute(r, 30s, 0); };
  EXPECT_TRUE(
      check({.lose_answer_fraction = 0.7, .delay_answer_fraction = 0.3, .delay_answer = 1ms}).ok());
  EXPECT_TRUE(check({.lose_answer_fraction = 1}).ok());
  absl::Status s = check({.lose_answer_fraction = 1.01});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("lose_answer_fraction must be a number from 0 to 1"),
            std::string_view::npos)
      << s;
  EXPECT_EQ(check({.delay_answer_fraction = std::nan(""), .delay_answer = 1s}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(check({.delay_answer_fraction = -0.5, .delay_answer = 1s}).code(),
            absl::StatusCode::kInvalidArgument);
  s = check({.lose_answer_fraction = 0.5, .delay_answer_fraction = 0.6, .delay_answer = 1s});
  EXPECT_NE(s.message().find("together must be at most 1"), std::string_view::npos) << s;
  s = check({.delay_answer_fraction = 0.5});
  EXPECT_NE(s.message().find("needs delay_answer"), std::string_view::npos) << s;
  s = check({.delay_answer = 1s});
  EXPECT_NE(s.message().find("delay_answer needs delay_answer_fraction"), std::string_view::npos)
      << s;
}

TEST(ValidateConfig, AFenceHeaderMustBeAHeaderNameOfItsOwn) {
  GatewayConfig c = Minimal();
  c.routes = {{.fence_header = "Idempotency-Fence"}};
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"Bad Header", "idempotency-key", "Host", "content-length",
                          "Idem-Deadline-Ms", "Connection", "Transfer-Encoding"}) {
    c.routes = {{.fence_header = bad}};
    absl::Status s = ValidateConfig(c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("fence_header"), std::string_view::npos) << s;
  }
  c.routes = {{.key_header = "webhook-id", .fence_header = "Webhook-ID"}};  // the route's key
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
}

// One writer on every store unless the setting says otherwise; the store's connection pool
// holds every writer and reader thread.
TEST(StoreWriters, OneOnEveryStoreUnlessTheSettingSaysOtherwise) {
  GatewayConfig c = Minimal();
  EXPECT_EQ(StoreWriters(c), 1);
  EXPECT_EQ(StoreConnections(c), 8);
  c.store = "postgresql://idem@127.0.0.1/idem";
  EXPECT_EQ(StoreWriters(c), 1);
  c.store = "nats://127.0.0.1:4222?bucket=k";
  EXPECT_EQ(StoreWriters(c), 1);
  c.store_writers = 12;
  c.store_threads = 3;
  EXPECT_EQ(StoreWriters(c), 12);
  EXPECT_EQ(StoreConnections(c), 17);
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.store_writers = -1;
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
  c.store_writers = 65;
  EXPECT_EQ(ValidateConfig(c).code(), absl::StatusCode::kInvalidArgument);
}

TEST(FindRoute, FirstMatchingRouteWins) {
  GatewayConfig c = Minimal();
  c.routes = {{.methods = {"POST"}, .path_prefix = "/a", .key_required = true},
              {.methods = {"POST"}, .path_prefix = "/"}};
  EXPECT_EQ(FindRoute(c, "POST", "/a/1"), &c.routes[0]);
  EXPECT_EQ(FindRoute(c, "POST", "/b"), &c.routes[1]);
  EXPECT_EQ(FindRoute(c, "GET", "/a"), nullptr);
}

TEST(FindRoute, PathsNoRouteCoversKeepTheTopLevelGuardUnlessUnmatchedIsPass) {
  GatewayConfig c = Minimal();
  c.require_key = true;
  c.routes = {{.methods = {"POST"}, .path_prefix = "/webhooks", .key_header = "webhook-id"}};
  EXPECT_EQ(FindRoute(c, "POST", "/webhooks/stripe"), &c.routes[0]);
  // The route's path, another method: decided by the routes alone, so it passes through.
  EXPECT_EQ(FindRoute(c, "PATCH", "/webhooks/stripe"), nullptr);
  const Route* other = FindRoute(c, "POST", "/charges");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->path_prefix, "/");
  EXPECT_TRUE(other->key_required);
  EXPECT_EQ(other->key_header, "Idempotency-Key");
  EXPECT_NE(FindRoute(c, "PATCH", "/charges/1"), nullptr);
  EXPECT_EQ(FindRoute(c, "GET", "/charges"), nullptr);
  c.unmatched = Unmatched::kPass;
  EXPECT_EQ(FindRoute(c, "POST", "/charges"), nullptr);
  EXPECT_EQ(FindRoute(c, "POST", "/webhooks/stripe"), &c.routes[0]);
}

TEST(DescribeRouting, NamesEachRouteAndEveryOtherPath) {
  GatewayConfig c = Minimal();
  EXPECT_EQ(DescribeRouting(c),
            "POST, PATCH on every path guarded (key from header Idempotency-Key, optional)");
  c.routes = {
      {.methods = {"POST"},
       .path_prefix = "/webhooks",
       .key_required = true,
       .key_header = "webhook-id"},
      {.path_prefix = "/events", .key_source = KeySource::kJsonPointer, .key_pointer = "/id"}};
  EXPECT_EQ(DescribeRouting(c),
            "POST /webhooks guarded (key from header webhook-id, required); POST, PATCH /events "
            "guarded (key from JSON pointer /id, optional); POST, PATCH on every other path "
            "guarded (key from header Idempotency-Key, optional)");
  c.unmatched = Unmatched::kPass;
  c.routes.pop_back();
  EXPECT_EQ(DescribeRouting(c),
            "POST /webhooks guarded (key from header webhook-id, required); every other path "
            "passes through unguarded (unmatched = \"pass\")");
}

TEST(ClassifyOutcome, DefaultsPlus409TransientThenRouteOverrides) {
  Route r;
  EXPECT_EQ(ClassifyOutcome(r, 201), OutcomeClass::kCompleted);
  EXPECT_EQ(ClassifyOutcome(r, 400), OutcomeClass::kFailedFinal);
  for (int s : {408, 409, 425, 429, 500, 503})
    EXPECT_EQ(ClassifyOutcome(r, s), OutcomeClass::kTransient) << s;
  r.final_statuses = {503};
  r.transient_statuses = {404};
  EXPECT_EQ(ClassifyOutcome(r, 503), OutcomeClass::kFailedFinal);
  EXPECT_EQ(ClassifyOutcome(r, 404), OutcomeClass::kTransient);
}

// The rules as overrides of the retry toolkit's classifier, each later With winning: what
// ClassifyOutcome must give on every status.
OutcomeClassifier OverridesOf(const Route& route) {
  OutcomeClassifier classifier = OutcomeClassifier().With(409, OutcomeClass::kTransient);
  for (int status : route.final_statuses) {
    classifier = classifier.With(
        status, status < 400 ? OutcomeClass::kCompleted : OutcomeClass::kFailedFinal);
  }
  for (int status : route.transient_statuses)
    classifier = classifier.With(status, OutcomeClass::kTransient);
  return classifier;
}

TEST(ClassifyOutcome, AgreesWithTheToolkitsClassifierWithTheRoutesOverridesOnEveryStatus) {
  std::vector<Route> routes(4);
  routes[1].final_statuses = {409, 503, 202};
  routes[2].transient_statuses = {404, 201};
  routes[3].final_statuses = {404, 500, 409};
  routes[3].transient_statuses = {500, 200};  // in both lists: transient, as the later override
  for (const Route& r : routes) {
    const OutcomeClassifier classifier = OverridesOf(r);
    for (int s = 100; s <= 599; ++s) EXPECT_EQ(ClassifyOutcome(r, s), classifier.Classify(s)) << s;
  }
}

TEST(ParseByteSize, AcceptsBinaryAndDecimalUnits) {
  EXPECT_EQ(*ParseByteSize("512"), 512);
  EXPECT_EQ(*ParseByteSize("64KiB"), 64 * 1024);
  EXPECT_EQ(*ParseByteSize("1MiB"), 1 << 20);
  EXPECT_EQ(*ParseByteSize("2MB"), 2'000'000);
  // Out of range or written with an exponent: refused, never read through a double.
  for (const char* bad : {"", "1.5MiB", "-1", "MiB", "1 MiB", "1mib", "5TiB", "2000GiB", "1e300KiB",
                          "1e3", "99999999999999999999KiB", "9223372036854775807KiB"})
    EXPECT_EQ(ParseByteSize(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
}

TEST(RestartSettingsChanged, NamesEverySettingButTheRoutesAndRequireKey) {
  GatewayConfig running;
  running.listen = "127.0.0.1:8080";
  running.routes = {Route{.path_prefix = "/a"}};
  GatewayConfig next = running;
  next.routes = {Route{.path_prefix = "/b", .key_required = true}, Route{}};
  next.require_key = true;
  EXPECT_TRUE(RestartSettingsChanged(running, next).empty());
  next.listen = "127.0.0.1:8081";
  next.lease = 40s;
  next.drain_timeout = 1s;
  next.store_writers = 2;
  EXPECT_EQ(RestartSettingsChanged(running, next),
            (std::vector<std::string>{"listen", "lease", "store_writers", "drain_timeout"}));
}

}  // namespace
}  // namespace idem::gateway
