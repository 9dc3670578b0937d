// The fixture every gateway end-to-end test builds on: the real examples/charges upstream on a
// free port, a fresh store, and helpers to start the real idem binary in front of it. The store
// is a SQLite file; a fresh schema on the "postgres" CTest fixture's server when the binary runs
// with IDEM_E2E_STORE=postgres in its environment; a fresh R=3 bucket on the "nats_cluster"
// fixture's three-node JetStream cluster with IDEM_E2E_STORE=nats. tests/gateway/CMakeLists.txt
// builds the test files once and registers them on each store, with the test prefixes "Postgres"
// and "Nats" on the second and third. store_down_test.cc, whose tests differ by store, is compiled
// twice instead (with IDEM_E2E_POSTGRES defined for PostgreSQL); E2E_SUITE(Name) names its
// PostgreSQL suites.
#ifndef IDEM_TESTS_GATEWAY_GATEWAY_FIXTURE_H_
#define IDEM_TESTS_GATEWAY_GATEWAY_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "e2e_support.h"
#ifdef IDEM_E2E_WITH_POSTGRES
#include "pg_test_support.h"
#endif
#ifdef IDEM_E2E_WITH_NATS
#include "nats_test_support.h"
#endif
#ifdef IDEM_E2E_POSTGRES
#define E2E_SUITE(name) Postgres##name
#else
#define E2E_SUITE(name) name
#endif

namespace idem::e2e {

using Headers = std::vector<std::pair<std::string, std::string>>;
inline const std::string kBody = R"({"amount":4200,"currency":"eur"})";

class GatewayFixture : public ::testing::Test {
 protected:
  // Whether this run's store is PostgreSQL (see the top of this file).
  static bool OnPostgres() {
#ifdef IDEM_E2E_POSTGRES
    return true;
#else
    const char* store = std::getenv("IDEM_E2E_STORE");
    return store != nullptr && std::string_view(store) == "postgres";
#endif
  }

  // Whether this run's store is the NATS cluster (see the top of this file).
  static bool OnNats() {
    const char* store = std::getenv("IDEM_E2E_STORE");
    return store != nullptr && std::string_view(store) == "nats";
  }

  void SetUp() override {
    char dir[] = "/tmp/idem-gateway-e2e-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    charges_port_ = FreePort();
    std::vector<std::string> charges_argv = {CHARGES_BINARY, "--listen",
                                             "127.0.0.1:" + std::to_string(charges_port_)};
    charges_argv.insert(charges_argv.end(), charges_flags_.begin(), charges_flags_.end());
    charges_ = std::make_unique<Child>(charges_argv, dir_ + "/charges.log");
    ASSERT_TRUE(Eventually([&] { return Send(charges_port_, "GET", "/stats").status == 200; }));
    if (OnPostgres()) {
#ifdef IDEM_E2E_WITH_POSTGRES
      auto fresh = pgtest::CreateFreshSchemaUri();
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      store_ = fresh->uri;
#else
      FAIL() << "IDEM_E2E_STORE=postgres, but this test binary was built without PostgreSQL";
#endif
    } else if (OnNats()) {
#ifdef IDEM_E2E_WITH_NATS
      auto uri = natstest::StoreUri(natstest::Fixture::kCluster,
                                    "replicas=3&bucket=" + natstest::FreshBucket("e2e"));
      ASSERT_TRUE(uri.ok()) << uri.status();
      store_ = *uri;
#else
      FAIL() << "IDEM_E2E_STORE=nats, but this test binary was built without the NATS store";
#endif
    } else {
      store_ = "sqlite:" + dir_ + "/idem.db";
    }
    port_ = FreePort();
    admin_port_ = FreePort();
  }

  void TearDown() override {
    gateway_.reset();
    charges_.reset();
    if (HasFailure()) std::cerr << "idem serve log:\n" << Log() << "\n";
    std::filesystem::remove_all(dir_);
  }

  std::string Log() const { return ReadFile(dir_ + "/idem.log"); }
  std::string Upstream() const { return "http://127.0.0.1:" + std::to_string(charges_port_); }

  // Starts an idem serve on `port` with its admin listener on `admin_port`, logging to `log`.
  std::unique_ptr<Child> Spawn(int port, int admin_port, const std::vector<std::string>& extra,
                               const std::string& upstream, const std::string& log) {
    std::vector<std::string> argv = launcher_;
    const std::vector<std::string> serve = {
        IDEM_BINARY,    "serve",
        "--listen",     "127.0.0.1:" + std::to_string(port),
        "--upstream",   upstream,
        "--store",      store_,
        "--admin",      "127.0.0.1:" + std::to_string(admin_port),
        "--io-threads", "2"};
    argv.insert(argv.end(), serve.begin(), serve.end());
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto child = std::make_unique<Child>(argv, log);
    Eventually(
        [&] { return !child->Running() || Send(admin_port, "GET", "/healthz").status == 200; });
    return child;
  }

  // Starts idem serve (again, on the same ports and store) with `extra` flags.
  void StartGateway(std::vector<std::string> extra = {}, std::string upstream = "") {
    if (upstream.empty()) upstream = Upstream();
    gateway_.reset();
    gateway_ = Spawn(port_, admin_port_, extra, upstream, dir_ + "/idem.log");
    ASSERT_TRUE(gateway_->Running()) << Log();
  }

  // Writes `toml` to a config file in the scratch folder and returns its path.
  std::string Config(const std::string& toml, const std::string& name = "idem.toml") {
    const std::string path = dir_ + "/" + name;
    WriteFile(path, toml);
    return path;
  }

  Response Post(const std::string& key, const std::string& body = kBody, Headers extra = {},
                const std::string& target = "/charges") {
    Headers headers = {{"Idempotency-Key", key}, {"Content-Type", "application/json"}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    return Send(port_, "POST", target, headers, body);
  }

  long Stat(const std::string& field) {
    return JsonNumber(Send(charges_port_, "GET", "/stats").body, field);
  }
  std::string Stats() { return Send(charges_port_, "GET", "/stats").body; }
  double Metric(const std::string& name) {
    return MetricValue(Send(admin_port_, "GET", "/metrics").body, name);
  }

  void ExpectProblem(const Response& r, int status) {
    EXPECT_EQ(r.status, status) << r.body << r.error;
    EXPECT_EQ(r.Header("Content-Type"), "application/problem+json");
    for (const char* field : {"\"type\"", "\"title\"", "\"status\"", "\"detail\""})
      EXPECT_NE(r.body.find(field), std::string::npos) << r.body;
  }

  // The lease a dead gateway left on a key, as bounds the test can know without reading the
  // store: the claim was made after `claim_not_before` (taken before the request was sent) and
  // before `claim_not_after` (once the upstream saw the request).
  struct DeadLease {
    std::chrono::system_clock::time_point claim_not_before, claim_not_after;
    std::chrono::seconds lease;
  };

  // Sends the first retry of `key` after the gateway holding it died. While the dead gateway's
  // lease surely lives, the answer must be 409 with Retry-After; once it surely lapsed, the retry
  // must take the key over (201, executed). How long a kill and a restart take depends on the
  // machine's load, not on the test, so which case a run sees is measured rather than assumed.
  Response ExpectFirstRetryAfterDeath(int port, const std::string& key, const DeadLease& dead) {
    const auto sent = std::chrono::system_clock::now();
    const Response r =
        Send(port, "POST", "/charges",
             {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, kBody);
    const auto answered = std::chrono::system_clock::now();
    if (answered < dead.claim_not_before + dead.lease) {
      ExpectProblem(r, 409);
      EXPECT_GE(std::atoi(r.Header("Retry-After").c_str()), 1) << r.Header("Retry-After");
    } else if (sent > dead.claim_not_after + dead.lease) {
      EXPECT_EQ(r.status, 201) << "the lease had lapsed; " << r.body << r.error;
      EXPECT_EQ(r.HeaderCount("Idempotent-Replayed"), 0);
    } else {
      EXPECT_TRUE(r.status == 409 || r.status == 201) << r.status << " " << r.body << r.error;
    }
    if (r.status != 409)
      std::cerr << "note: the restart outlasted the lease; the 409 half was not observable\n";
    return r;
  }

  std::string dir_, store_;
  std::vector<std::string> launcher_;  // put before the idem command line (e.g. prlimit ... --)
  std::vector<std::string> charges_flags_;  // given to examples/charges (set before SetUp)
  int charges_port_ = 0, port_ = 0, admin_port_ = 0;
  std::unique_ptr<Child> charges_, gateway_;
};

}  // namespace idem::e2e

#endif  // IDEM_TESTS_GATEWAY_GATEWAY_FIXTURE_H_
