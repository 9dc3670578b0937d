// End-to-end: routes with in_flight = "wait" (docs/gateway.md). A duplicate of a request still
// running waits for its outcome and replays it; past the route's wait bound it gets 409 with
// Retry-After. 40 concurrent identical requests on a held route: one upstream call, and all 40
// get the same answer.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(WaitModeE2E) : public GatewayFixture {
 protected:
  void SetUp() override {
    GatewayFixture::SetUp();
    StartGateway({"--config", Config(R"(
[[route]]
path_prefix = "/wait"
in_flight = "wait"
wait_max = "9s"

[[route]]
path_prefix = "/quick"
in_flight = "wait"
wait_max = "500ms"
)")});
  }
};
#define WaitModeE2E E2E_SUITE(WaitModeE2E)

TEST_F(WaitModeE2E, FortyConcurrentIdenticalRequestsOneUpstreamCallAllGetTheSameAnswer) {
  std::mutex mu;
  std::vector<Response> answers;
  std::vector<std::thread> clients;
  for (int i = 0; i < 40; ++i) {
    clients.emplace_back([&] {
      Response r = Post("order-w", kBody, {{"X-Charges-Hold", "w"}}, "/wait");
      std::lock_guard<std::mutex> lock(mu);
      answers.push_back(std::move(r));
    });
  }
  // One request is held upstream while every client is connected and waiting.
  ASSERT_TRUE(
      Eventually([&] { return Stat("held") == 1 && Metric("idem_open_connections") >= 40; }));
  EXPECT_EQ(Metric("idem_requests_total{decision=\"in_flight_conflict\"}"), 0);
  Send(charges_port_, "POST", "/release/w");
  for (std::thread& t : clients) t.join();
  ASSERT_EQ(answers.size(), 40u);
  int replayed = 0;
  for (const Response& r : answers) {
    EXPECT_EQ(r.status, 201) << r.body << r.error;
    EXPECT_EQ(r.body, answers.front().body);
    EXPECT_EQ(r.Header("Location"), answers.front().Header("Location"));
    replayed += r.Header("Idempotent-Replayed") == "true";
  }
  EXPECT_EQ(replayed, 39);
  EXPECT_EQ(Stat("calls"), 1);
  EXPECT_EQ(Stat("charges"), 1);
}

TEST_F(WaitModeE2E, WaitBoundExceededIs409WithRetryAfter) {
  std::thread first([&] {
    EXPECT_EQ(Post("order-q", kBody, {{"X-Charges-Hold", "q"}}, "/quick").status, 201);
  });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  const auto start = std::chrono::steady_clock::now();
  const Response dup = Post("order-q", kBody, {}, "/quick");
  const auto waited = std::chrono::steady_clock::now() - start;
  ExpectProblem(dup, 409);
  EXPECT_GE(std::atoi(dup.Header("Retry-After").c_str()), 1) << dup.Header("Retry-After");
  EXPECT_GE(waited, std::chrono::milliseconds(450));  // it waited for the bound first
  Send(charges_port_, "POST", "/release/q");
  first.join();
  const Response after = Post("order-q", kBody, {}, "/quick");
  EXPECT_EQ(after.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
}

TEST_F(WaitModeE2E, WaitingDuplicateWithAnotherBodyIs422NotAWait) {
  std::thread first([&] {
    EXPECT_EQ(Post("order-m", kBody, {{"X-Charges-Hold", "m"}}, "/wait").status, 201);
  });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  ExpectProblem(Post("order-m", R"({"amount":1})", {}, "/wait"), 422);
  Send(charges_port_, "POST", "/release/m");
  first.join();
}

}  // namespace
}  // namespace idem::e2e
