// What the new holder of a lapsed key may do, by route (one rule for a client's takeover and the
// completer), and the status URL's request.
#include "gateway/lapsed_key.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

TEST(ActionOnLapsedKey, OnlyAStatusRouteAsksAndNeverResends) {
  Route route;
  route.recover = RecoverMode::kOff;
  EXPECT_EQ(ActionOnLapsedKey(route), LapsedKeyAction::kResend);
  route.recover = RecoverMode::kResend;
  EXPECT_EQ(ActionOnLapsedKey(route), LapsedKeyAction::kResend);
  route.recover = RecoverMode::kStatus;
  EXPECT_EQ(ActionOnLapsedKey(route), LapsedKeyAction::kAskStatus);
}

TEST(StatusRequest, GetsTheStatusUrlWithTheKeyEncodedAndTheRequestsHeadersButItsBodys) {
  Route route;
  route.status_url = "/pay/by-key/{key}?k={key}";
  RecoveryNote note{.method = "POST", .target = "/pay", .body = "{}"};
  note.headers = {{"Authorization", "Bearer t"},
                  {"Content-Type", "application/json"},
                  {"Idempotency-Key", "\"old\""}};
  const http::request<http::string_body> r = StatusRequest(route, note, "a/b c");
  EXPECT_EQ(r.method(), http::verb::get);
  EXPECT_EQ(r.target(), "/pay/by-key/a%2Fb%20c?k=a%2Fb%20c");
  EXPECT_EQ(r["Authorization"], "Bearer t");
  EXPECT_EQ(r.count(http::field::content_type), 0u);
  EXPECT_EQ(r["Idempotency-Key"], "\"a/b c\"");
  EXPECT_TRUE(r.body().empty());
}

}  // namespace
}  // namespace idem::gateway
