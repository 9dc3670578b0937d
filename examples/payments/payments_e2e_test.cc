// idem-payments end to end: the real process, on SQLite and on PostgreSQL (IDEM_E2E_STORE).
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "payments_fixture.h"

namespace idem::payments::testing {
namespace {

constexpr char kPayment[] = R"({"amount":1000,"currency":"usd","customer":"cus_1"})";

std::string Payload(const std::string& type, const std::string& data) {
  return R"({"type":")" + type + R"(","data":)" + data + "}";
}

TEST_F(PaymentsE2e, PaymentIsCreatedOnceAndItsRetryReplaysTheSameBytes) {
  e2e::Response first = Post("/payments", kPayment, "pay-key-1");
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.Header("Content-Type"), "application/json");
  EXPECT_EQ(first.HeaderCount("Idempotent-Replayed"), 0);
  boost::json::object payment = Json(first.body);
  const std::string id(payment["id"].as_string());
  EXPECT_EQ(payment["amount"], 1000);
  EXPECT_EQ(payment["currency"], "usd");
  EXPECT_EQ(payment["customer"], "cus_1");
  // The same request with its members reordered and spaced: the same JSON, so a retry.
  e2e::Response retry = Post(
      "/payments", R"({ "customer": "cus_1", "currency": "usd", "amount": 1000 })", "pay-key-1");
  EXPECT_EQ(retry.status, 201);
  EXPECT_EQ(retry.body, first.body);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  std::vector<OutboxRecord> outbox = Outbox();
  ASSERT_EQ(outbox.size(), 1u);
  EXPECT_EQ(outbox[0].topic, "payment.created");
  EXPECT_EQ(outbox[0].aggregate_key, id);
  EXPECT_EQ(outbox[0].payload, Payload("payment.created", first.body));
  EXPECT_EQ(Rows("payments"), 1);
}

TEST_F(PaymentsE2e, KeyReusedWithAnotherBodyIs422AndAddsNothing) {
  ASSERT_EQ(Post("/payments", kPayment, "reused").status, 201);
  ExpectProblem(
      Post("/payments", R"({"amount":999,"currency":"usd","customer":"cus_1"})", "reused"), 422);
  EXPECT_EQ(Outbox().size(), 1u);
  EXPECT_EQ(Rows("payments"), 1);
}

TEST_F(PaymentsE2e, MissingOrMalformedKeyIs400AndStoresNothing) {
  ExpectProblem(Post("/payments", kPayment, ""), 400);
  ExpectProblem(Post("/payments", kPayment, "has space"), 400);
  ExpectProblem(e2e::Send(port_, "POST", "/payments",
                          {{"Idempotency-Key", "a"}, {"Idempotency-Key", "b"}}, kPayment),
                400);
  EXPECT_EQ(Outbox().size(), 0u);
  EXPECT_EQ(Rows("payments"), 0);
}

TEST_F(PaymentsE2e, BadBodiesAre400AndStoreNothing) {
  const std::vector<std::string> bad = {
      "",
      "not json",
      "[1000]",
      R"({"currency":"usd","customer":"c"})",
      R"({"amount":0,"currency":"usd","customer":"c"})",
      R"({"amount":-5,"currency":"usd","customer":"c"})",
      R"({"amount":"1000","currency":"usd","customer":"c"})",
      R"({"amount":10.5,"currency":"usd","customer":"c"})",
      R"({"amount":99999999999999999999,"currency":"usd","customer":"c"})",
      R"({"amount":1000,"customer":"c"})",
      R"({"amount":1000,"currency":"USD","customer":"c"})",
      R"({"amount":1000,"currency":"usd"})",
      R"({"amount":1000,"currency":"usd","customer":""})",
      R"({"amount":1000,"currency":"usd","customer":7})",
  };
  for (const std::string& body : bad) {
    ExpectProblem(Post("/payments", body, "bad-body"), 400);
  }
  EXPECT_EQ(Outbox().size(), 0u);
  EXPECT_EQ(Rows("payments"), 0);
  // The key was not recorded: it can still be used for a good request.
  e2e::Response good = Post("/payments", kPayment, "bad-body");
  EXPECT_EQ(good.status, 201) << good.body;
  EXPECT_EQ(good.HeaderCount("Idempotent-Replayed"), 0);
}

TEST_F(PaymentsE2e, RefundIsCreatedOnceWithItsMessageAfterThePaymentsOne) {
  const std::string id = CreatePayment(1000, "cus_2", "p");
  const std::string target = "/payments/" + id + "/refunds";
  e2e::Response first = Post(target, R"({"amount":300})", "r");
  ASSERT_EQ(first.status, 201) << first.body;
  boost::json::object refund = Json(first.body);
  EXPECT_EQ(refund["payment_id"], boost::json::value(id));
  EXPECT_EQ(refund["amount"], 300);
  EXPECT_TRUE(refund.contains("id"));
  e2e::Response retry = Post(target, R"({"amount": 300})", "r");
  EXPECT_EQ(retry.status, 201);
  EXPECT_EQ(retry.body, first.body);
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  ExpectProblem(Post(target, R"({"amount":301})", "r"), 422);
  std::vector<OutboxRecord> outbox = Outbox(id);
  ASSERT_EQ(outbox.size(), 2u);
  EXPECT_EQ(outbox[0].topic, "payment.created");
  EXPECT_EQ(outbox[1].topic, "refund.created");
  EXPECT_EQ(outbox[1].aggregate_key, id);
  EXPECT_EQ(outbox[1].payload, Payload("refund.created", first.body));
  EXPECT_LT(outbox[0].seq, outbox[1].seq);
  EXPECT_EQ(Rows("refunds"), 1);
}

TEST_F(PaymentsE2e, RefundRulesOfUnknownPaymentsAmountsAndKeys) {
  ExpectProblem(Post("/payments/pay_nope/refunds", R"({"amount":1})", "u"), 404);
  const std::string id = CreatePayment(500, "cus_3", "p");
  const std::string target = "/payments/" + id + "/refunds";
  ExpectProblem(Post(target, R"({"amount":1})", ""), 400);
  ExpectProblem(Post(target, R"({"amount":0})", "zero"), 400);
  ExpectProblem(Post(target, "{}", "none"), 400);
  ExpectProblem(Post(target, R"({"amount":501})", "over"), 422);
  // The refusal is the key's stored outcome: replayed, not re-decided.
  e2e::Response again = Post(target, R"({"amount":501})", "over");
  ExpectProblem(again, 422);
  EXPECT_EQ(again.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Post(target, R"({"amount":500})", "all").status, 201);
  ExpectProblem(Post(target, R"({"amount":1})", "more"), 422);
  EXPECT_EQ(Outbox(id).size(), 2u);  // the payment and the one refund
  EXPECT_EQ(Rows("refunds"), 1);
}

TEST_F(PaymentsE2e, ConcurrentRefundsNeverRefundMoreThanThePayment) {
  const std::string id = CreatePayment(1000, "cus_4", "p");
  std::atomic<int> created{0};
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 20; ++i) {
    threads.emplace_back([&, i] {
      e2e::Response r =
          Post("/payments/" + id + "/refunds", R"({"amount":100})", "r" + std::to_string(i));
      (r.status == 201 ? created : refused) += (r.status == 201 || r.status == 422) ? 1 : 0;
      EXPECT_TRUE(r.status == 201 || r.status == 422) << r.status << " " << r.body;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(created.load(), 10);
  EXPECT_EQ(refused.load(), 10);
  EXPECT_EQ(Json(e2e::Send(port_, "GET", "/payments/" + id).body)["refunded"], 1000);
  EXPECT_EQ(Outbox(id).size(), 11u);
  EXPECT_EQ(Rows("refunds"), 10);
}

TEST_F(PaymentsE2e, FortyConcurrentIdenticalPostsMakeOnePayment) {
  std::mutex mu;
  std::set<std::string> bodies;
  std::atomic<int> fresh{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 40; ++i) {
    threads.emplace_back([&] {
      e2e::Response r = Post("/payments", kPayment, "same-key");
      EXPECT_EQ(r.status, 201) << r.body;
      if (r.HeaderCount("Idempotent-Replayed") == 0) ++fresh;
      std::lock_guard<std::mutex> lock(mu);
      bodies.insert(r.body);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(fresh.load(), 1);
  EXPECT_EQ(bodies.size(), 1u);
  EXPECT_EQ(Rows("payments"), 1);
  EXPECT_EQ(Outbox().size(), 1u);
}

TEST_F(PaymentsE2e, UnknownRoutesAndMethodsAreProblems) {
  ExpectProblem(e2e::Send(port_, "GET", "/nothing"), 404);
  ExpectProblem(e2e::Send(port_, "GET", "/payments"), 405);
  ExpectProblem(e2e::Send(port_, "GET", "/payments/pay_nope"), 404);
}

}  // namespace
}  // namespace idem::payments::testing

namespace idem::payments::testing {
namespace {

TEST_F(PaymentsE2e, IdemOutboxListShowsOneMessagePerPaymentAndRefund) {
  const std::string id = CreatePayment(700, "cus_5", "p");
  ASSERT_EQ(Post("/payments/" + id + "/refunds", R"({"amount":100})", "r").status, 201);
  e2e::RunResult listed = e2e::RunToExit(
      {IDEM_BINARY, "outbox", "list", "--store", uri_, "--format", "json"}, dir_.string());
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  std::error_code ec;
  boost::json::value doc = boost::json::parse(listed.output, ec);
  ASSERT_FALSE(ec) << listed.output;
  ASSERT_TRUE(doc.is_array());
  ASSERT_EQ(doc.as_array().size(), 2u);
  EXPECT_EQ(doc.as_array()[0].at("topic"), "payment.created");
  EXPECT_EQ(doc.as_array()[1].at("topic"), "refund.created");
  for (const auto& message : doc.as_array()) {
    EXPECT_EQ(message.at("aggregate_key"), boost::json::value(id));
    EXPECT_EQ(message.at("state"), "pending");
  }
}

TEST_F(PaymentsE2e, SigtermStopsTheServiceWithExitZero) {
  ASSERT_EQ(Post("/payments", kPayment, "before-stop").status, 201);
  service_->Signal(SIGTERM);
  EXPECT_EQ(service_->Wait(std::chrono::seconds(10)), 0)
      << e2e::ReadFile((dir_ / "service.log").string());
}

TEST_F(PaymentsE2e, BadCommandLinesExitTwoAndAnUnusableStoreExitsOne) {
  const std::string scratch = dir_.string();
  EXPECT_EQ(e2e::RunToExit({IDEM_PAYMENTS_BINARY}, scratch).exit_code, 2);
  EXPECT_EQ(e2e::RunToExit({IDEM_PAYMENTS_BINARY, "--listen", "127.0.0.1:1"}, scratch).exit_code,
            2);
  EXPECT_EQ(
      e2e::RunToExit({IDEM_PAYMENTS_BINARY, "consume", "--listen", "127.0.0.1:1", "--store", uri_},
                     scratch)
          .exit_code,
      2);  // no --secret
  e2e::RunResult bad_secret =
      e2e::RunToExit({IDEM_PAYMENTS_BINARY, "consume", "--listen", "127.0.0.1:1", "--store", uri_,
                      "--secret", "not-a-secret"},
                     scratch);
  EXPECT_EQ(bad_secret.exit_code, 1) << bad_secret.output;
  e2e::RunResult bad_store = e2e::RunToExit(
      {IDEM_PAYMENTS_BINARY, "--listen", "127.0.0.1:1", "--store", "mysql://x"}, scratch);
  EXPECT_EQ(bad_store.exit_code, 1) << bad_store.output;
  e2e::RunResult bad_listen =
      e2e::RunToExit({IDEM_PAYMENTS_BINARY, "--listen", "nowhere", "--store", uri_}, scratch);
  EXPECT_EQ(bad_listen.exit_code, 1) << bad_listen.output;
  EXPECT_NE(bad_listen.output.find("HOST:PORT"), std::string::npos) << bad_listen.output;
}

}  // namespace
}  // namespace idem::payments::testing
