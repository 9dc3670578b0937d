// End-to-end: a key store that is down, busy or full fails closed. The gateway answers 503
// application/problem+json with Retry-After and never forwards the request unguarded; once the
// store is back, the same key runs (nothing was stored). SQLite: another connection holds the
// database's write lock, or a file size limit fills it. PostgreSQL: the test's private server
// (the "postgres_gateway_down" fixture, never the shared one) is stopped and started again.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "gateway_fixture.h"
#include "store_faults.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(StoreDownE2E) : public GatewayFixture {
 protected:
  void ExpectStoreUnavailable(const Response& r) {
    ExpectProblem(r, 503);
    EXPECT_NE(r.body.find("store-unavailable"), std::string::npos) << r.body;
    EXPECT_GE(std::atoi(r.Header("Retry-After").c_str()), 1) << r.Header("Retry-After");
  }
};
#define StoreDownE2E E2E_SUITE(StoreDownE2E)

#ifndef IDEM_E2E_POSTGRES
TEST_F(StoreDownE2E, LockedStoreIs503WithRetryAfterAndNothingIsForwarded) {
  StartGateway({"--lock-timeout", "200ms"});
  ASSERT_EQ(Post("before").status, 201);
  {
    WriteLockHolder lock(dir_ + "/idem.db");
    ASSERT_TRUE(lock.locked());
    ExpectStoreUnavailable(Post("while-locked"));
    ExpectStoreUnavailable(Post("while-locked", kBody, {{"X-Charges-Status", "402"}}));
    EXPECT_EQ(Stat("calls"), 1);
    EXPECT_EQ(Metric("idem_requests_total{decision=\"store_unavailable\"}"), 2);
  }
  const Response after = Post("while-locked");
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_EQ(after.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Stat("calls"), 2);
}
// The lease of a request in flight cannot be renewed (another connection holds the store's write
// lock, so every heartbeat fails): shortly before the lease would lapse the gateway cancels the
// upstream call with a 504, rather than let another gateway take the key over while the effect
// may still run. Once the lease has lapsed, the next retry runs with the same key.
TEST_F(StoreDownE2E, UnrenewableLeaseCancelsTheUpstreamCallBeforeTheLeaseLapses) {
  StartGateway({"--lease", "6s", "--upstream-timeout", "5900ms", "--lock-timeout", "100ms"});
  ASSERT_EQ(Post("before").status, 201);
  Response cancelled;
  {
    std::thread call([&] { cancelled = Post("held", kBody, {{"X-Charges-Hold", "forever"}}); });
    const bool held = Eventually([&] { return Stat("held") == 1; });
    WriteLockHolder lock(dir_ + "/idem.db");
    const bool locked = lock.locked();
    call.join();
    ASSERT_TRUE(held);
    ASSERT_TRUE(locked);
  }
  ExpectProblem(cancelled, 504);
  EXPECT_NE(cancelled.body.find("could not renew"), std::string::npos) << cancelled.body;
  Response retried;
  ASSERT_TRUE(Eventually(
      [&] {
        retried = Post("held");
        return retried.status != 409;
      },
      std::chrono::seconds(30)));
  EXPECT_EQ(retried.status, 201) << retried.body;
  EXPECT_EQ(Stat("calls"), 3);
  EXPECT_NE(Stats().find(R"("keys":["before","held","held"])"), std::string::npos) << Stats();
}

// A full disk, made real by a file size limit on the gateway (prlimit --fsize): once the store's
// write-ahead log reaches it, SQLite reports "database or disk is full". Each claim that cannot be
// written is a 503 and is not forwarded; the gateway lives on and still answers replays. Where the
// limit is first met by a completion rather than a claim, that request ran and its client gets 503
// outcome-not-recorded (the outcome kept, issue 22): counted as forwarded, and the filling goes on.
TEST_F(StoreDownE2E, FullStoreIs503WithRetryAfterNothingForwardedAndTheGatewayLivesOn) {
  StartGateway();
  ASSERT_EQ(Post("before").status, 201);
  // A clean stop folds the write-ahead log into the database file and removes it.
  gateway_->Signal(SIGTERM);
  ASSERT_EQ(gateway_->Wait(std::chrono::seconds(20)), 0);
  ASSERT_FALSE(std::filesystem::exists(dir_ + "/idem.db-wal"));
  const auto limit = std::filesystem::file_size(dir_ + "/idem.db") + 96 * 1024;
  launcher_ = {"/usr/bin/prlimit", "--fsize=" + std::to_string(limit), "--"};
  StartGateway();
  int executed = 0;
  Response full;
  const auto claim_refused = [](const Response& r) {
    return r.status == 503 && r.body.find("outcome-not-recorded") == std::string::npos;
  };
  for (int i = 0; i < 500 && !claim_refused(full); ++i) {
    const long calls_before = Stat("calls");
    full = Post("fill-" + std::to_string(i));
    if (claim_refused(full)) {
      EXPECT_EQ(Stat("calls"), calls_before) << "a request the store refused was forwarded";
    } else if (full.status == 503) {
      EXPECT_EQ(Stat("calls"), calls_before + 1) << full.body;
      ++executed;
    } else {
      ASSERT_EQ(full.status, 201) << full.body;
      ++executed;
    }
  }
  ExpectStoreUnavailable(full);
  EXPECT_GT(executed, 0);
  EXPECT_GE(Metric("idem_store_failed_commits_total"), 1);
  EXPECT_TRUE(gateway_->Running());
  EXPECT_EQ(Post("before").Header("Idempotent-Replayed"), "true");
}
#else
bool Fixture(const std::string& command) { return PgFixture(command); }

TEST_F(StoreDownE2E, StoppedServerIs503WithRetryAfterAndNothingIsForwarded) {
  StartGateway({"--lock-timeout", "1s"});
  ASSERT_EQ(Post("before").status, 201);
  ASSERT_TRUE(Fixture("pause"));
  ExpectStoreUnavailable(Post("while-down"));
  // An outcome this gateway recorded is replayed from its memory (docs/gateway.md, Replay cache).
  EXPECT_EQ(Post("before").Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
  ASSERT_TRUE(Fixture("resume"));
  // The gateway reconnects by itself; the key that met the stopped server was never stored.
  Response after;
  ASSERT_TRUE(Eventually([&] {
    after = Post("while-down");
    return after.status != 503;
  }));
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_EQ(after.HeaderCount("Idempotent-Replayed"), 0);
  EXPECT_EQ(Post("before").Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 2);
}

// Issue 37, item 10: the 503 of a stopped server names neither the server nor its user, port or
// database; it carries the request's id, under which the gateway's log has the store's words.
TEST_F(StoreDownE2E, StoppedServersWordsGoToTheLogAndItsClientGetsARequestId) {
  StartGateway({"--lock-timeout", "1s"});
  ASSERT_EQ(Post("before").status, 201);
  ASSERT_TRUE(Fixture("pause"));
  const Response named = Post("down-named", kBody, {{"X-Request-Id", "store-down-4711"}});
  const Response unnamed = Post("down-unnamed");
  ASSERT_TRUE(Fixture("resume"));
  // postgresql://USER@HOST:PORT/DB?options=...: each part, as the store's words would name it.
  const size_t at = store_.find('@'), colon = store_.find(':', at), slash = store_.find('/', at);
  ASSERT_TRUE(at != std::string::npos && colon < slash && slash != std::string::npos) << store_;
  const std::string user = store_.substr(store_.find("//") + 2, at - store_.find("//") - 2);
  const std::string host = store_.substr(at + 1, colon - at - 1);
  const std::string port = store_.substr(colon + 1, slash - colon - 1);
  const std::string db = store_.substr(slash + 1, store_.find('?', slash) - slash - 1);
  for (const Response* r : {&named, &unnamed}) {
    ExpectStoreUnavailable(*r);
    for (const std::string& secret :
         {user + "@", host, ":" + port, "/" + db, std::string("Postgre")})
      EXPECT_EQ(r->body.find(secret), std::string::npos) << secret << " in " << r->body;
  }
  EXPECT_NE(named.body.find("\"request_id\":\"store-down-4711\""), std::string::npos) << named.body;
  const size_t id_at = unnamed.body.find("\"request_id\":\"");
  ASSERT_NE(id_at, std::string::npos) << unnamed.body;
  const std::string id =
      unnamed.body.substr(id_at + 14, unnamed.body.find('"', id_at + 14) - id_at - 14);
  ASSERT_FALSE(id.empty()) << unnamed.body;
  for (const std::string& logged : {std::string("store-down-4711"), id}) {
    const size_t line = Log().find(logged + ": key store failed: ");
    ASSERT_NE(line, std::string::npos) << logged << " not logged:\n" << Log();
    EXPECT_NE(Log().find("PostgreSQL", line), std::string::npos) << Log();
  }
  EXPECT_EQ(Stat("calls"), 1);  // nothing was forwarded
}
#endif

}  // namespace
}  // namespace idem::e2e
