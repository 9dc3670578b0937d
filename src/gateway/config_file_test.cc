#include "gateway/config_file.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

absl::StatusOr<GatewayConfig> Parse(std::string_view text) {
  return ParseConfigText(text, "idem.toml", GatewayConfig{});
}

TEST(ParseConfigText, ReadsSettingsAndRoutes) {
  auto c = Parse(R"(
listen = "127.0.0.1:8080"
upstream = "http://127.0.0.1:9000"
store = "sqlite:/tmp/x.db"
lease = "5s"
upstream_timeout = "2s"
retention = "1h"
max_body = "64KiB"
require_key = true
tenant_header = "X-Tenant"
max_requests_per_connection = 500
store_writers = 6

[[route]]
methods = ["POST"]
path_prefix = "/webhooks"
key = "required"
key_header = "webhook-id"
in_flight = "wait"
wait_max = "3s"
replay_headers = ["X-Charge-Id"]
final_statuses = [409]

[[route]]
path_prefix = "/events"
key_pointer = "/id"
fence_header = "Idempotency-Fence"
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->listen, "127.0.0.1:8080");
  EXPECT_EQ(c->lease, Millis(5000));
  EXPECT_EQ(c->upstream_timeout, Millis(2000));
  EXPECT_EQ(c->retention, Millis(3'600'000));
  EXPECT_EQ(c->max_body, 65536);
  EXPECT_TRUE(c->require_key);
  EXPECT_EQ(c->tenant_header, "X-Tenant");
  EXPECT_EQ(c->max_requests_per_connection, 500);
  EXPECT_EQ(c->store_writers, 6);
  ASSERT_EQ(c->routes.size(), 2u);
  const Route& hook = c->routes[0];
  EXPECT_EQ(hook.methods, std::vector<std::string>{"POST"});
  EXPECT_TRUE(hook.key_required);
  EXPECT_EQ(hook.key_header, "webhook-id");
  EXPECT_EQ(hook.in_flight, InFlightPolicy::kWait);
  EXPECT_EQ(hook.wait_max, Millis(3000));
  EXPECT_EQ(hook.replay_headers, std::vector<std::string>{"X-Charge-Id"});
  EXPECT_EQ(hook.final_statuses, std::vector<int>{409});
  EXPECT_EQ(c->routes[1].key_source, KeySource::kJsonPointer);
  EXPECT_EQ(c->routes[1].key_pointer, "/id");
  EXPECT_EQ(c->routes[1].fence_header, "Idempotency-Fence");
  EXPECT_EQ(hook.fence_header, "");  // off by default
  EXPECT_EQ(c->routes[1].methods, (std::vector<std::string>{"POST", "PATCH"}));
  EXPECT_TRUE(ValidateConfig(*c).ok()) << ValidateConfig(*c);
}

void ExpectError(std::string_view text, std::string_view where, std::string_view what) {
  auto c = Parse(text);
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << text;
  EXPECT_NE(std::string(c.status().message()).find(where), std::string_view::npos) << c.status();
  EXPECT_NE(std::string(c.status().message()).find(what), std::string_view::npos) << c.status();
}

TEST(ParseConfigText, UnmatchedIsGuardUnlessTheFileSaysPass) {
  auto c = Parse("[[route]]\npath_prefix = \"/webhooks\"\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->unmatched, Unmatched::kGuard);
  c = Parse("unmatched = \"pass\"\n[[route]]\npath_prefix = \"/webhooks\"\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->unmatched, Unmatched::kPass);
  c = Parse("unmatched = \"guard\"\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->unmatched, Unmatched::kGuard);
}

TEST(ParseConfigText, ErrorsNameFileLineAndWhatIsWrong) {
  ExpectError("listen = \"a\"\nlease = \"30 seconds\"\n", "idem.toml:2:", "lease");
  ExpectError("\n\nleese = \"30s\"\n", "idem.toml:3:", "unknown setting 'leese'");
  ExpectError("max_body = \"1 MB\"\n", "idem.toml:1:", "not a size");
  ExpectError("require_key = \"yes\"\n", "idem.toml:1:", "true or false");
  ExpectError("listen = \n", "idem.toml:1:", "");
  ExpectError("[[route]]\nkey = \"always\"\n", "idem.toml:2:", "required");
  ExpectError("[[route]]\nin_flight = \"queue\"\n", "idem.toml:2:", "conflict");
  ExpectError("[[route]]\nfinal_statuses = [99]\n", "idem.toml:2:", "HTTP status");
  // Floats are refused, never converted (2e41 as an integer is undefined behaviour).
  ExpectError("[[route]]\nfinal_statuses = [2e41]\n", "idem.toml:2:", "HTTP status");
  ExpectError("[[route]]\nfinal_statuses = [201.0]\n", "idem.toml:2:", "HTTP status");
  ExpectError("max_connections = 1e300\n", "idem.toml:1:", "whole number");
  // Durations and sizes out of range, or as TOML numbers, are refused with the setting's name.
  ExpectError("lease = \"1e30s\"\n", "idem.toml:1:", "exponents");
  ExpectError("lease = 1e30\n", "idem.toml:1:", "lease must be a string");
  ExpectError("retention = \"99999999999999999999h\"\n", "idem.toml:1:", "too large");
  ExpectError("max_body = \"1e300KiB\"\n", "idem.toml:1:", "not a size");
  ExpectError("max_body = 1e300\n", "idem.toml:1:", "max_body");
  ExpectError("[[route]]\nmethod = [\"POST\"]\n", "idem.toml:2:", "unknown route setting");
  ExpectError("route = 1\n", "idem.toml:1:", "[[route]]");
  ExpectError("unmatched = \"open\"\n", "idem.toml:1:", "unmatched must be \"guard\"");
  // Checks across a route's settings name the route's [[route]] line.
  ExpectError("\n[[route]]\npath_prefix = \"webhooks\"\n", "idem.toml:2:", "must start with '/'");
  ExpectError("lease = \"2s\"\n[[route]]\nin_flight = \"wait\"\nwait_max = \"5s\"\n",
              "idem.toml:2:", "wait bound");
}

TEST(ParseConfigText, ReadsAnswerFaultsAndRefusesFractionsOutOfRange) {
  auto c = Parse(
      "[[route]]\nlose_answer_fraction = 0.1\ndelay_answer_fraction = 0.9\n"
      "delay_answer = \"2s\"\n[[route]]\nlose_answer_fraction = 1\n"
      "[[route]]\nlose_answer_fraction = 0\n");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->routes.size(), 3u);
  EXPECT_DOUBLE_EQ(c->routes[0].lose_answer_fraction, 0.1);
  EXPECT_DOUBLE_EQ(c->routes[0].delay_answer_fraction, 0.9);
  EXPECT_EQ(c->routes[0].delay_answer, 2000ms);
  EXPECT_DOUBLE_EQ(c->routes[1].lose_answer_fraction, 1.0);  // an integer is a fraction too
  EXPECT_FALSE(c->routes[2].HasAnswerFaults());
  ExpectError("[[route]]\nlose_answer_fraction = 1.5\n", "idem.toml:2:", "from 0 to 1");
  ExpectError("[[route]]\nlose_answer_fraction = -0.1\n", "idem.toml:2:", "from 0 to 1");
  ExpectError("[[route]]\nlose_answer_fraction = nan\n", "idem.toml:2:", "from 0 to 1");
  ExpectError("[[route]]\nlose_answer_fraction = 2\n", "idem.toml:2:", "from 0 to 1");
  ExpectError("[[route]]\ndelay_answer_fraction = \"10%\"\n", "idem.toml:2:", "from 0 to 1");
  ExpectError("[[route]]\ndelay_answer = \"soon\"\n", "idem.toml:2:", "delay_answer");
  // Settings that only go together: at the route's [[route]] line.
  ExpectError("[[route]]\ndelay_answer_fraction = 0.5\n", "idem.toml:1:", "needs delay_answer");
  ExpectError("[[route]]\ndelay_answer = \"1s\"\n", "idem.toml:1:", "delay_answer_fraction");
  ExpectError(
      "[[route]]\nlose_answer_fraction = 0.5\ndelay_answer_fraction = 0.75\n"
      "delay_answer = \"1s\"\n",
      "idem.toml:1:", "together must be at most 1");
}

TEST(LoadConfigFile, MissingFileIsNotFound) {
  EXPECT_EQ(LoadConfigFile("/nonexistent/idem.toml", {}).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace idem::gateway
