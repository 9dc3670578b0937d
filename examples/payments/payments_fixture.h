// The fixture of the payments example's end-to-end tests: the real idem-payments process on a
// free loopback port, on SQLite (a file in a fresh folder) or, with IDEM_E2E_STORE=postgres, on a
// fresh schema of the "postgres" CTest fixture's server; the same store opened in the test to
// read the outbox and the example's tables.
#ifndef IDEM_EXAMPLES_PAYMENTS_PAYMENTS_FIXTURE_H_
#define IDEM_EXAMPLES_PAYMENTS_PAYMENTS_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "e2e_support.h"
#include "idem/outbox_admin.h"
#include "idem/store.h"
#ifdef IDEM_TEST_WITH_POSTGRES
#include "pg_test_support.h"
#endif

namespace idem::payments::testing {

using Headers = std::vector<std::pair<std::string, std::string>>;

class PaymentsE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* on = std::getenv("IDEM_E2E_STORE");
    const std::string store = on == nullptr ? "" : on;
    dir_ = std::filesystem::temp_directory_path() /
           ("idem-payments-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    if (store == "postgres") {
#ifdef IDEM_TEST_WITH_POSTGRES
      auto fresh = pgtest::CreateFreshSchemaUri();
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      uri_ = fresh->uri;
#else
      FAIL() << "IDEM_E2E_STORE=postgres, but this test binary was built without PostgreSQL";
#endif
    } else {
      ASSERT_TRUE(store.empty() || store == "sqlite") << "no payments on store " << store;
      uri_ = "sqlite:" + (dir_ / "payments.db").string();
    }
    port_ = e2e::FreePort();
    service_ = Start({IDEM_PAYMENTS_BINARY, "--listen", Address(port_), "--store", uri_}, port_,
                     "service.log");
    auto opened = OpenStore(uri_);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = std::move(*opened);
  }

  void TearDown() override {
    service_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static std::string Address(int port) { return "127.0.0.1:" + std::to_string(port); }

  // Starts `argv` and waits until it answers HTTP on `port`.
  std::unique_ptr<e2e::Child> Start(const std::vector<std::string>& argv, int port,
                                    const std::string& log) {
    auto child = std::make_unique<e2e::Child>(argv, (dir_ / log).string());
    const bool up = e2e::Eventually([&] { return e2e::Send(port, "GET", "/").status != 0; });
    EXPECT_TRUE(up) << argv[0] << " did not answer: " << e2e::ReadFile((dir_ / log).string());
    return child;
  }

  e2e::Response Post(const std::string& target, const std::string& body, const std::string& key) {
    Headers headers = {{"Content-Type", "application/json"}};
    if (!key.empty()) headers.emplace_back("Idempotency-Key", key);
    return e2e::Send(port_, "POST", target, headers, body);
  }

  static boost::json::object Json(const std::string& body) {
    std::error_code ec;
    boost::json::value value = boost::json::parse(body, ec);
    EXPECT_FALSE(ec) << body;
    return !ec && value.is_object() ? value.as_object() : boost::json::object{};
  }

  // Checks an RFC 9457 problem document of `status`.
  static void ExpectProblem(const e2e::Response& r, int status) {
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.Header("Content-Type"), "application/problem+json");
    boost::json::object doc = Json(r.body);
    EXPECT_TRUE(doc.contains("type") && doc.contains("title") && doc.contains("detail")) << r.body;
    EXPECT_EQ(doc["status"], status) << r.body;
  }

  // Creates a payment and returns its id.
  std::string CreatePayment(int64_t amount, const std::string& customer, const std::string& key) {
    e2e::Response r = Post("/payments",
                           R"({"amount":)" + std::to_string(amount) +
                               R"(,"currency":"usd","customer":")" + customer + R"("})",
                           key);
    EXPECT_EQ(r.status, 201) << r.body;
    return std::string(Json(r.body)["id"].as_string());
  }

  // The outbox messages (with payloads) of `aggregate` ("" for all), in order.
  std::vector<OutboxRecord> Outbox(const std::string& aggregate = "") {
    auto listed = ListOutbox(*store_, {.aggregate_key = aggregate, .limit = 10000});
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::vector<OutboxRecord> full;
    for (const OutboxRecord& record : listed.ok() ? *listed : std::vector<OutboxRecord>{}) {
      auto one = GetOutboxMessage(*store_, record.id);
      EXPECT_TRUE(one.ok()) << one.status();
      if (one.ok()) full.push_back(*one);
    }
    return full;
  }

  // SELECT COUNT(*) of the example's table `table`.
  int64_t Rows(const std::string& table) {
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok()) << tx.status();
    if (!tx.ok()) return -1;
    auto rows = (*tx)->Query("SELECT COUNT(*) FROM " + table);
    EXPECT_TRUE(rows.ok()) << rows.status();
    (void)(*tx)->Rollback();
    return rows.ok() ? std::get<int64_t>(rows->front()[0]) : -1;
  }

  std::filesystem::path dir_;
  std::string uri_;
  int port_ = 0;
  std::unique_ptr<e2e::Child> service_;
  std::unique_ptr<Store> store_;
};

}  // namespace idem::payments::testing

#endif  // IDEM_EXAMPLES_PAYMENTS_PAYMENTS_FIXTURE_H_
