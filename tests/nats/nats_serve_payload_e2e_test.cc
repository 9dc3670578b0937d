// idem serve on NATS servers whose max_payload (64 KiB here; 1 MiB by default) is below the
// gateway's stored-answer limit (16 MiB): an answer larger than a key record can carry is the 502
// upstream-answer-not-kept, recorded like an answer over 16 MiB on the SQL stores, and every retry
// gets it without a second run. Before, its Complete was refused, the outcome kept and retried for
// ever (the client got 503, its retries 409), and once --max-pending-bytes was reached every new
// key got 503. On a server of the nats fixture's script started with that max_payload.
#include <memory>
#include <string>
#include <vector>

#include "gateway_fixture.h"
#include "idem/store.h"
#include "nats_test_support.h"
#include "scripted_upstream.h"

namespace idem::e2e {
namespace {

using Reply = ScriptedUpstream::Reply;

class NatsServePayloadE2E : public GatewayFixture {
 protected:
  void SetUp() override {
    GatewayFixture::SetUp();
    absl::StatusOr<std::string> uri = natstest::StoreUri(
        natstest::Fixture::kSingle, "replicas=1&bucket=" + natstest::FreshBucket("payload"));
    ASSERT_TRUE(uri.ok()) << uri.status();
    store_ = *uri;
  }
};

TEST_F(NatsServePayloadE2E, AnAnswerLargerThanTheServersMaxPayloadIs502RecordedAndRetriesGetIt) {
  ScriptedUpstream upstream([](const std::string& head) {
    const bool big = head.starts_with("POST /charges/big ");
    return Reply{ScriptedUpstream::Answer("201 Created", std::string(big ? 96 << 10 : 32 << 10,
                                                                     big ? 'b' : 'f'))};
  });
  StartGateway({}, upstream.Url());
  const Response big = Post("order-big", kBody, {}, "/charges/big");
  ExpectProblem(big, 502);
  EXPECT_NE(big.body.find("upstream-answer-not-kept"), std::string::npos) << big.body;
  const Response retry = Post("order-big", kBody, {}, "/charges/big");
  EXPECT_EQ(retry.status, 502) << retry.body;
  EXPECT_EQ(retry.body, big.body);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(upstream.requests(), 1);
  EXPECT_EQ(Metric("idem_outcomes_pending"), 0);
  // An answer within the limit is kept and replayed as ever.
  const Response fits = Post("order-fits", kBody, {}, "/charges/fits");
  EXPECT_EQ(fits.status, 201) << fits.body;
  EXPECT_EQ(fits.body.size(), size_t{32} << 10);
  const Response replayed = Post("order-fits", kBody, {}, "/charges/fits");
  EXPECT_EQ(replayed.status, 201);
  EXPECT_EQ(replayed.body, fits.body);
  EXPECT_EQ(replayed.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(upstream.requests(), 2);
  EXPECT_EQ(Metric("idem_outcomes_pending"), 0);
}

// The storm's sequence of seed 191079 (tests/storm/FINDINGS.md), replayed step by step: tenant t0
// completes key K on a key_pointer route; tenant t1 sends the same key string K on another route
// and the upstream's answer is too large to keep. t1's client gets the 502 only once it is
// recorded: a gateway without a replay cache, started afterwards, replays it to t1 and t0's 201
// to t0, and the store holds each tenant's own record. The key string shared by two tenants
// never mixes their records, and nothing runs twice.
TEST_F(NatsServePayloadE2E, AKeyStringTwoTenantsShareKeepsEachTenantsAnswerWhenOneIsTooLarge) {
  ScriptedUpstream upstream([](const std::string& head) {
    const bool big = head.starts_with("POST /off/");
    return Reply{ScriptedUpstream::Answer("201 Created", std::string(big ? 96 << 10 : 64, 'a'))};
  });
  const std::string config = Config(R"(
[[route]]
path_prefix = "/ptr"
fence_header = "Idempotency-Fence"
key_pointer = "/id"

[[route]]
path_prefix = "/off"
in_flight = "wait"
wait_max = "2s"
fence_header = "Idempotency-Fence"
)");
  const std::vector<std::string> flags = {"--config", config, "--tenant-header", "X-Tenant"};
  StartGateway(flags, upstream.Url());
  const std::string key = "shared-k16";
  const std::string ptr_body = R"({"id":")" + key + R"(","amount":1})";
  const Response t0 = Send(port_, "POST", "/ptr/charge",
                           {{"Content-Type", "application/json"}, {"X-Tenant", "t0"}}, ptr_body);
  ASSERT_EQ(t0.status, 201) << t0.body;
  const Response t1 = Post(key, kBody, {{"X-Tenant", "t1"}}, "/off/charge");
  ExpectProblem(t1, 502);
  EXPECT_NE(t1.body.find("upstream-answer-not-kept"), std::string::npos) << t1.body;

  // A fresh gateway, without a replay cache: what it answers comes from the store.
  StartGateway({"--config", config, "--tenant-header", "X-Tenant", "--cache-bytes", "0"},
               upstream.Url());
  for (int n = 0; n < 2; ++n) {
    const Response again1 = Post(key, kBody, {{"X-Tenant", "t1"}}, "/off/charge");
    EXPECT_EQ(again1.status, 502) << again1.body;
    EXPECT_EQ(again1.body, t1.body);
    EXPECT_EQ(again1.Header("Idempotent-Replayed"), "true");
    const Response again0 = Send(
        port_, "POST", "/ptr/charge", {{"Content-Type", "application/json"}, {"X-Tenant", "t0"}},
        ptr_body);
    EXPECT_EQ(again0.status, 201) << again0.body;
    EXPECT_EQ(again0.body, t0.body);
    EXPECT_EQ(again0.Header("Idempotent-Replayed"), "true");
  }
  EXPECT_EQ(upstream.requests(), 2);
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(store_);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<KeyRecord> kept1 = (*store)->Get({.tenant = "t1", .key = key});
  ASSERT_TRUE(kept1.ok()) << kept1.status();
  EXPECT_EQ(kept1->state, KeyState::kFailedFinal);
  EXPECT_EQ(kept1->response.status, 502);
  absl::StatusOr<KeyRecord> kept0 = (*store)->Get({.tenant = "t0", .key = key});
  ASSERT_TRUE(kept0.ok()) << kept0.status();
  EXPECT_EQ(kept0->state, KeyState::kCompleted);
  EXPECT_EQ(kept0->response.status, 201);
}

// On a route with `recover` each claim stores the request as its note: a request larger than a
// key record can carry is refused at once with 413 request-too-large-to-recover naming the limit,
// nothing stored and nothing forwarded, and its retry gets the same (issue 37, item 4). Before,
// the claim was refused with OutOfRange and the client got 503 store-unavailable, for ever.
TEST_F(NatsServePayloadE2E, ARequestLargerThanTheStoreKeepsForRecoveryIs413NothingStoredOrSent) {
  ScriptedUpstream upstream(
      [](const std::string&) { return Reply{ScriptedUpstream::Answer("201 Created", "ok")}; });
  const std::string config = Config(R"(
[[route]]
path_prefix = "/charges"
recover = "resend"
)");
  StartGateway({"--config", config}, upstream.Url());
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(store_);
  ASSERT_TRUE(store.ok()) << store.status();
  const int64_t limit = (*store)->MaxResponseBytes();
  ASSERT_GT(limit, 0);
  // Over the 64 KiB of the servers' max_payload, within --max-body.
  const std::string huge = "\"" + std::string(80 << 10, 'h') + "\"";

  const Response refused = Post("order-huge", huge);
  ExpectProblem(refused, 413);
  EXPECT_NE(refused.body.find("request-too-large-to-recover"), std::string::npos) << refused.body;
  EXPECT_NE(refused.body.find(std::to_string(limit)), std::string::npos) << refused.body;
  const Response again = Post("order-huge", huge);
  ExpectProblem(again, 413);
  EXPECT_EQ(again.body, refused.body);
  EXPECT_EQ(upstream.requests(), 0);
  absl::StatusOr<KeyRecord> record = (*store)->Get({.tenant = "", .key = "order-huge"});
  EXPECT_TRUE(absl::IsNotFound(record.status())) << record.status();
  absl::StatusOr<std::vector<KeyRecord>> kept = (*store)->List({.include_expired = true});
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_TRUE(kept->empty()) << kept->size() << " record(s), the first " << (*kept)[0].scope.key;
  EXPECT_EQ(Metric("idem_outcomes_pending"), 0);

  // A request within the limit on the same route is kept and answered as ever.
  const Response fits = Post("order-small", kBody);
  EXPECT_EQ(fits.status, 201) << fits.body;
  EXPECT_EQ(upstream.requests(), 1);
  kept = (*store)->List({.include_expired = true});
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_EQ(kept->size(), 1u);
  EXPECT_EQ((*kept)[0].scope.key, "order-small");
}

}  // namespace
}  // namespace idem::e2e
