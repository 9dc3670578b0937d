#include "gateway/recovery_note.h"

#include <gtest/gtest.h>

#include "gateway/completer.h"
#include "gateway/config_file.h"

namespace idem::gateway {
namespace {

TEST(RecoveryNote, RoundTripsTheRequestAsForwarded) {
  http::request<http::string_body> request{http::verb::post, "/charges?x=1", 11};
  request.set(http::field::host, "gateway.example");
  request.set("Idempotency-Key", "\"order-1\"");
  request.set("Authorization", "Bearer sk_test");
  request.set("Idem-Deadline-Ms", "900");
  request.set(http::field::connection, "keep-alive");
  request.body() = std::string("{\"amount\":1}\0tail", 17);
  request.prepare_payload();
  RecoveryNote note = NoteOf(request);
  note.attempts = 2;
  std::optional<RecoveryNote> back = DecodeNote(EncodeNote(note));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->method, "POST");
  EXPECT_EQ(back->target, "/charges?x=1");
  EXPECT_EQ(back->body, request.body());
  EXPECT_EQ(back->attempts, 2);
  std::vector<std::string> names;
  for (const Header& h : back->headers) names.push_back(h.name);
  // Host, the deadline and the body's length are set again at each forward; hop-by-hop fields
  // never go.
  EXPECT_EQ(names, (std::vector<std::string>{"Idempotency-Key", "Authorization"}));
  const http::request<http::string_body> again = RequestOf(*back);
  EXPECT_EQ(again.method(), http::verb::post);
  EXPECT_EQ(again["Idempotency-Key"], "\"order-1\"");
  EXPECT_EQ(again.body(), request.body());
  EXPECT_EQ(again[http::field::content_length], "17");
}

TEST(RecoveryNote, AnythingElseIsNoNote) {
  EXPECT_FALSE(DecodeNote(StoredResponse{}).has_value());
  EXPECT_FALSE(DecodeNote(StoredResponse{.status = 201, .body = "{}"}).has_value());
  StoredResponse bad = EncodeNote({.method = "POST", .target = "/x"});
  bad.headers[3].value = "many";
  EXPECT_FALSE(DecodeNote(bad).has_value());
  StoredResponse future = EncodeNote({.method = "POST", .target = "/x"});
  future.headers[0].value = "2";
  EXPECT_FALSE(DecodeNote(future).has_value());
}

TEST(PercentEncode, KeepsOnlyUnreservedBytes) {
  EXPECT_EQ(PercentEncode("order-1._~Z"), "order-1._~Z");
  EXPECT_EQ(PercentEncode("a/b c?%\""), "a%2Fb%20c%3F%25%22");
}

TEST(RecoverConfig, ReadsTheRouteAndTopLevelSettings) {
  auto c = ParseConfigText(R"(
recover_interval = "2s"
recover_attempts = 4
[[route]]
path_prefix = "/charges"
recover = "status"
status_url = "/charges/by-key/{key}"
recovered_status = 201
[[route]]
path_prefix = "/refunds"
recover = "resend"
)",
                           "idem.toml", GatewayConfig{});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->recover_interval, Millis(2000));
  EXPECT_EQ(c->recover_attempts, 4);
  ASSERT_EQ(c->routes.size(), 2u);
  EXPECT_EQ(c->routes[0].recover, RecoverMode::kStatus);
  EXPECT_EQ(c->routes[0].status_url, "/charges/by-key/{key}");
  EXPECT_EQ(c->routes[0].recovered_status, 201);
  EXPECT_EQ(c->routes[1].recover, RecoverMode::kResend);
  EXPECT_TRUE(AnyRouteRecovers(*c));
  EXPECT_FALSE(AnyRouteRecovers(GatewayConfig{}));
  EXPECT_EQ(GatewayConfig{}.recover_interval, Millis(5000));
  EXPECT_EQ(GatewayConfig{}.recover_attempts, 10);
}

TEST(RecoverConfig, RefusesWhatCannotRun) {
  for (const char* text : {
           "[[route]]\nrecover = \"maybe\"\n",
           "[[route]]\nrecover = \"status\"\n",
           "[[route]]\nrecover = \"status\"\nstatus_url = \"/by-key\"\n",
           "[[route]]\nrecover = \"resend\"\nstatus_url = \"/by-key/{key}\"\n",
           "[[route]]\nrecover = \"status\"\nstatus_url = \"/k/{key}\"\nrecovered_status = 42\n",
           "recover_attempts = 0\n",
           "recover_interval = \"0s\"\n",
       }) {
    GatewayConfig base{
        .listen = "127.0.0.1:1", .upstream = "http://127.0.0.1:2", .store = "sqlite:x"};
    absl::StatusOr<GatewayConfig> c = ParseConfigText(text, "idem.toml", base);
    const absl::Status s = c.ok() ? ValidateConfig(*c) : c.status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << text;
  }
}

}  // namespace
}  // namespace idem::gateway
