// service -> real `idem relay --sink http` -> idem-payments consume, end to end, on SQLite and on
// PostgreSQL (IDEM_E2E_STORE): every event applied once, a redelivery skipped, a bad signature
// refused.
#include <chrono>
#include <map>

#include "idem/webhook_signature.h"
#include "payments_fixture.h"

namespace idem::payments::testing {
namespace {

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

class ConsumerE2e : public PaymentsE2e {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(PaymentsE2e::SetUp());
    consumer_port_ = e2e::FreePort();
    consumer_ = Start({IDEM_PAYMENTS_BINARY, "consume", "--listen", Address(consumer_port_),
                       "--store", uri_, "--secret", kSecret},
                      consumer_port_, "consumer.log");
  }
  void TearDown() override {
    relay_.reset();
    consumer_.reset();
    PaymentsE2e::TearDown();
  }

  void StartRelay() {
    relay_ = std::make_unique<e2e::Child>(
        std::vector<std::string>{IDEM_BINARY, "relay", "--store", uri_, "--sink", "http", "--url",
                                 "http://" + Address(consumer_port_) + "/webhooks", "--secret",
                                 kSecret, "--backoff-base", "0s", "--poll", "50ms"},
        (dir_ / "relay.log").string());
  }

  // The customer's totals as GET /customers/NAME shows them ({} before any event of it).
  boost::json::object Totals(const std::string& customer) {
    e2e::Response r = e2e::Send(consumer_port_, "GET", "/customers/" + customer);
    return r.status == 200 ? Json(r.body) : boost::json::object{};
  }
  bool TotalBecomes(const std::string& customer, int64_t total) {
    return e2e::Eventually([&] {
      boost::json::object t = Totals(customer);
      return t.contains("total") && t["total"] == total;
    });
  }

  // POSTs `body` to the consumer as a webhook with id `id`, signed with `secret`.
  e2e::Response Deliver(const std::string& id, const std::string& body,
                        const std::string& secret = kSecret) {
    auto key = DecodeWebhookSecret(secret);
    EXPECT_TRUE(key.ok()) << key.status();
    const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return e2e::Send(consumer_port_, "POST", "/webhooks",
                     {{"Content-Type", "application/json"},
                      {"webhook-id", id},
                      {"webhook-timestamp", std::to_string(now)},
                      {"webhook-signature", SignWebhook(key.ok() ? *key : "", id, now, body)}},
                     body);
  }

  int consumer_port_ = 0;
  std::unique_ptr<e2e::Child> consumer_;
  std::unique_ptr<e2e::Child> relay_;
};

TEST_F(ConsumerE2e, RelayedEventsAreAppliedOncePerCustomer) {
  const std::string a = CreatePayment(1000, "cus_a", "pa");
  ASSERT_EQ(Post("/payments/" + a + "/refunds", R"({"amount":300})", "ra").status, 201);
  CreatePayment(500, "cus_b", "pb");
  CreatePayment(500, "cus_b", "pb");  // a replay: no second event
  StartRelay();
  ASSERT_TRUE(TotalBecomes("cus_a", 700)) << e2e::ReadFile((dir_ / "relay.log").string());
  ASSERT_TRUE(TotalBecomes("cus_b", 500));
  boost::json::object t = Totals("cus_a");
  EXPECT_EQ(t["payments"], 1);
  EXPECT_EQ(t["refunds"], 1);
  EXPECT_EQ(t["paid"], 1000);
  EXPECT_EQ(t["refunded"], 300);
  EXPECT_EQ(Totals("cus_b")["payments"], 1);
  // Events that come later are delivered by the running relay.
  ASSERT_EQ(Post("/payments/" + a + "/refunds", R"({"amount":200})", "ra2").status, 201);
  EXPECT_TRUE(TotalBecomes("cus_a", 500));
}

TEST_F(ConsumerE2e, RedeliveredWebhookIsAppliedOnce) {
  CreatePayment(1000, "cus_c", "pc");
  StartRelay();
  ASSERT_TRUE(TotalBecomes("cus_c", 1000));
  std::vector<OutboxRecord> sent = Outbox();
  ASSERT_EQ(sent.size(), 1u);
  // The relay's delivery again, as after a lost acknowledgement: same webhook-id, same body.
  e2e::Response again = Deliver(sent[0].id, sent[0].payload);
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.body, R"({"applied":false})");
  EXPECT_EQ(Totals("cus_c")["total"], 1000);
  EXPECT_EQ(Totals("cus_c")["payments"], 1);
}

TEST_F(ConsumerE2e, BadSignatureIsRefusedAndAppliesNothing) {
  const std::string body =
      R"({"type":"payment.created","data":{"id":"pay_x","amount":100,"currency":"usd","customer":"cus_d"}})";
  ExpectProblem(Deliver("msg-1", body, "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), 401);
  ExpectProblem(e2e::Send(consumer_port_, "POST", "/webhooks", {}, body), 400);
  EXPECT_EQ(e2e::Send(consumer_port_, "GET", "/customers/cus_d").status, 404);
  // Signed with the right secret, the same message is applied; its id was not consumed before.
  e2e::Response good = Deliver("msg-1", body);
  EXPECT_EQ(good.status, 200) << good.body;
  EXPECT_EQ(good.body, R"({"applied":true})");
  EXPECT_EQ(Totals("cus_d")["total"], 100);
}

TEST_F(ConsumerE2e, PayloadThatIsNoPaymentsEventIs400AndAppliesNothing) {
  ExpectProblem(Deliver("msg-2", "not json"), 400);
  ExpectProblem(Deliver("msg-3", R"({"type":"order.created","data":{}})"), 400);
  ExpectProblem(Deliver("msg-4", R"({"type":"payment.created","data":{"customer":"x"}})"), 400);
  EXPECT_EQ(e2e::Send(consumer_port_, "GET", "/customers/x").status, 404);
}

}  // namespace
}  // namespace idem::payments::testing
