// End-to-end tests of `idem serve` (DESIGN §3) over real sockets: the real idem binary in front
// of the real examples/charges upstream, on SQLite (gateway_e2e_test) and on PostgreSQL
// (gateway_e2e_postgres_test, on the "postgres" CTest fixture). Every wait polls a condition with
// a deadline; the upstream holds a request until the test releases it (X-Charges-Hold).
#include <signal.h>

#include <atomic>
#include <thread>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(GatewayE2E) : public GatewayFixture {};
#define GatewayE2E E2E_SUITE(GatewayE2E)

TEST_F(GatewayE2E, RetryReplaysStatusBodyAndHeadersByteForByteWithoutUpstreamCall) {
  StartGateway();
  const Response first = Post("order-1");
  ASSERT_EQ(first.status, 201) << first.body << first.error;
  EXPECT_EQ(first.HeaderCount("Idempotent-Replayed"), 0);
  // Key order and whitespace do not matter: the JSON body is canonicalised.
  const Response retry = Post("order-1", R"({ "currency" : "eur", "amount" : 4200 })");
  EXPECT_EQ(retry.status, 201);
  EXPECT_EQ(retry.body, first.body);
  EXPECT_EQ(retry.Header("Content-Type"), first.Header("Content-Type"));
  EXPECT_EQ(retry.Header("Location"), first.Header("Location"));
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
  EXPECT_EQ(Stat("charges"), 1);
}

TEST_F(GatewayE2E, KeyIsForwardedUpstreamAndSfStringFormIsTheSameKey) {
  StartGateway();
  ASSERT_EQ(Post("\"order-sf\"").status, 201);
  EXPECT_EQ(Post("order-sf").Header("Idempotent-Replayed"), "true");
  EXPECT_NE(Send(charges_port_, "GET", "/stats").body.find("order-sf"), std::string::npos);
}

TEST_F(GatewayE2E, SameKeyWithAnotherBodyOrPathIs422AndNeverTheStoredResponse) {
  StartGateway();
  ASSERT_EQ(Post("order-2").status, 201);
  ExpectProblem(Post("order-2", R"({"amount":1})"), 422);
  ExpectProblem(Post("order-2", kBody, {}, "/refunds"), 422);
  EXPECT_EQ(Stat("calls"), 1);
}

// Regression: numbers were read as doubles before the fingerprint, so a second body differing
// only in a number its double cannot carry (a 64-bit id and its neighbour) passed for the first
// and got its stored answer: its own intent was silently dropped. Now 422; spellings of one
// decimal value (1.50, 1.5) are still one request.
TEST_F(GatewayE2E, SameKeyWithANumberTheFirstsDoubleWouldRoundAlikeIs422) {
  StartGateway();
  const std::pair<std::string, std::string> pairs[] = {
      {R"({"account_id":1234567890123456789})", R"({"account_id":1234567890123456788})"},
      {R"({"id":9007199254740993})", R"({"id":9007199254740992})"},
      {R"({"amount":0.1})", R"({"amount":0.10000000000000001})"},
      {R"({"rate":1e-400})", R"({"rate":0})"},
  };
  int n = 0;
  for (const auto& [first, second] : pairs) {
    const std::string key = "number-" + std::to_string(++n);
    ASSERT_EQ(Post(key, first).status, 201) << first;
    const Response other = Post(key, second);
    ExpectProblem(other, 422);
    EXPECT_EQ(other.HeaderCount("Idempotent-Replayed"), 0) << second;
  }
  EXPECT_EQ(Stat("calls"), n);
  ASSERT_EQ(Post("number-same", R"({"amount":1.50,"id":1234567890123456789})").status, 201);
  EXPECT_EQ(Post("number-same", R"({"id":1234567890123456789.0, "amount":15e-1})")
                .HeaderCount("Idempotent-Replayed"),
            1);
  EXPECT_EQ(Stat("calls"), n + 1);
}

TEST_F(GatewayE2E, SameKeyWhileFirstRunsIs409WithRetryAfter) {
  StartGateway();
  std::thread first([&] {
    EXPECT_EQ(Post("order-3", kBody, {{"X-Charges-Hold", "h"}}).status, 201);
  });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  const Response dup = Post("order-3");
  ExpectProblem(dup, 409);
  EXPECT_GE(std::atoi(dup.Header("Retry-After").c_str()), 1) << dup.Header("Retry-After");
  Send(charges_port_, "POST", "/release/h");
  first.join();
  EXPECT_EQ(Post("order-3").Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
}

TEST_F(GatewayE2E, MalformedDuplicateAndMissingRequiredKeysAre400AndNothingIsForwarded) {
  StartGateway({"--require-key"});
  ExpectProblem(Post(std::string(256, 'k')), 400);
  ExpectProblem(Post("has space"), 400);
  ExpectProblem(
      Send(port_, "POST", "/charges", {{"Idempotency-Key", "a"}, {"Idempotency-Key", "b"}}, kBody),
      400);
  ExpectProblem(Send(port_, "POST", "/charges", {{"Idempotency-Key", "\"a\", \"b\""}}, kBody), 400);
  ExpectProblem(Send(port_, "POST", "/charges", {}, kBody), 400);
  EXPECT_EQ(Stat("calls"), 0);
}

TEST_F(GatewayE2E, BodyOverTheLimitIs413AndNothingIsForwarded) {
  StartGateway({"--max-body", "1KiB"});
  ExpectProblem(Post("big", std::string(4096, 'x')), 413);
  EXPECT_EQ(Stat("calls"), 0);
  EXPECT_EQ(Post("big", std::string(1024, 'x')).status, 201);
}

TEST_F(GatewayE2E, UnreachableUpstreamIs502AndNotStored) {
  StartGateway({}, "http://127.0.0.1:" + std::to_string(FreePort()));
  ExpectProblem(Post("order-4"), 502);
  // Not stored and the key released: the retry runs again instead of replaying or 409.
  ExpectProblem(Post("order-4"), 502);
}

TEST_F(GatewayE2E, SlowUpstreamIs504NotStoredAndTheKeyIsReleased) {
  StartGateway({"--upstream-timeout", "1s", "--lease", "10s"});
  ExpectProblem(Post("order-5", kBody, {{"X-Charges-Delay-Ms", "3000"}}), 504);
  const Response retry = Post("order-5");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
}

TEST_F(GatewayE2E, TransientOutcomeIsNotStoredAndTheKeyIsReleased) {
  StartGateway();
  EXPECT_EQ(Post("order-6", kBody, {{"X-Charges-Status", "503"}}).status, 503);
  const Response retry = Post("order-6");
  EXPECT_EQ(retry.status, 201);
  EXPECT_EQ(retry.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("charges"), 1);
}

TEST_F(GatewayE2E, DeterministicFailureIsStoredAndReplayed) {
  StartGateway();
  EXPECT_EQ(Post("order-7", kBody, {{"X-Charges-Status", "402"}}).status, 402);
  const Response retry = Post("order-7");
  EXPECT_EQ(retry.status, 402);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
}

TEST_F(GatewayE2E, FortyConcurrentIdenticalRequestsMakeExactlyOneUpstreamCall) {
  StartGateway();
  std::atomic<int> conflicts{0}, created{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 40; ++i) {
    clients.emplace_back([&] {
      const Response r = Post("order-8", kBody, {{"X-Charges-Hold", "many"}});
      if (r.status == 409 && !r.Header("Retry-After").empty()) {
        ++conflicts;
      } else if (r.status == 201) {
        ++created;
      } else {
        ++other;
      }
    });
  }
  // While the one forwarded request is held upstream, every other one must be answered 409.
  ASSERT_TRUE(Eventually([&] { return conflicts.load() + other.load() == 39; }));
  EXPECT_EQ(Stat("held"), 1);
  Send(charges_port_, "POST", "/release/many");
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(conflicts.load(), 39);
  EXPECT_EQ(created.load(), 1);
  EXPECT_EQ(Stat("calls"), 1);
}

TEST_F(GatewayE2E, KilledGatewaysKeyIs409WhileLeasedThenTakenOverWithTheSameKey) {
  StartGateway({"--lease", "10s", "--upstream-timeout", "2s"});
  DeadLease dead{.claim_not_before = std::chrono::system_clock::now(),
                 .lease = std::chrono::seconds(10)};
  std::thread victim([&] { Post("order-9", kBody, {{"X-Charges-Hold", "crash"}}); });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  dead.claim_not_after = std::chrono::system_clock::now();
  gateway_->Signal(SIGKILL);
  EXPECT_EQ(gateway_->Wait(std::chrono::seconds(10)), 128 + SIGKILL);
  victim.join();
  // On a loaded machine the restart can take longer than the lease: the first retry is then
  // already the takeover (it used to be expected to answer 409 regardless, and failed).
  StartGateway({"--lease", "10s", "--upstream-timeout", "2s"});
  Response after = ExpectFirstRetryAfterDeath(port_, "order-9", dead);
  ASSERT_TRUE(after.status != 409 || Eventually(
                                         [&] {
                                           after = Post("order-9");
                                           return after.status != 409;
                                         },
                                         std::chrono::seconds(40)));
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_EQ(after.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
  const std::string stats = Send(charges_port_, "GET", "/stats").body;
  EXPECT_NE(stats.find(R"("keys":["order-9","order-9"])"), std::string::npos) << stats;
}

TEST_F(GatewayE2E, UnguardedRequestsPassThroughUntouched) {
  StartGateway();
  const Response stats = Send(port_, "GET", "/stats");
  EXPECT_EQ(stats.status, 200);
  EXPECT_NE(stats.body.find("\"calls\":0"), std::string::npos) << stats.body;
  EXPECT_EQ(Send(port_, "POST", "/charges", {}, kBody).status, 201);  // no key: not guarded
  EXPECT_EQ(Send(port_, "POST", "/charges", {}, kBody).status, 201);
  EXPECT_EQ(Stat("charges"), 2);
}

TEST_F(GatewayE2E, AdminServesHealthReadinessAndMetricsByDecision) {
  StartGateway();
  ASSERT_EQ(Post("order-10").status, 201);
  ASSERT_EQ(Post("order-10").status, 201);
  EXPECT_EQ(Send(admin_port_, "GET", "/readyz").status, 200);
  const std::string metrics = Send(admin_port_, "GET", "/metrics").body;
  EXPECT_NE(metrics.find("idem_requests_total{decision=\"executed\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("idem_requests_total{decision=\"replayed\"} 1"), std::string::npos);
  EXPECT_NE(metrics.find("idem_keys_in_flight 0"), std::string::npos);
  EXPECT_NE(metrics.find("idem_request_duration_seconds_bucket"), std::string::npos);
  EXPECT_EQ(Send(port_, "GET", "/metrics").status, 404);  // never mixed into proxied paths
}

TEST_F(GatewayE2E, SigtermFinishesTheRequestInFlightAndExitsZero) {
  StartGateway();
  std::thread client([&] {
    EXPECT_EQ(Post("order-11", kBody, {{"X-Charges-Hold", "term"}}).status, 201);
  });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  gateway_->Signal(SIGTERM);
  Send(charges_port_, "POST", "/release/term");
  EXPECT_EQ(gateway_->Wait(std::chrono::seconds(20)), 0);
  client.join();
  EXPECT_EQ(Stat("charges"), 1);
}

TEST_F(GatewayE2E, UpstreamTimeoutNotShorterThanLeaseIsRefusedAtStart) {
  Child refused(
      {IDEM_BINARY, "serve", "--listen", "127.0.0.1:" + std::to_string(port_), "--upstream",
       "http://127.0.0.1:1", "--store", store_, "--lease", "5s", "--upstream-timeout", "5s"},
      dir_ + "/idem.log");
  EXPECT_EQ(refused.Wait(std::chrono::seconds(20)), 2);
  EXPECT_NE(Log().find("--upstream-timeout (5s) must be shorter than --lease (5s)"),
            std::string::npos)
      << Log();
}

}  // namespace
}  // namespace idem::e2e
