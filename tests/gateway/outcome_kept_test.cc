// End-to-end: once the upstream has answered, that answer is the key's answer, even when the key
// store does not take it at once (SQLite: another connection holds the write lock longer than
// lock_timeout; PostgreSQL: the test's private server is stopped, then started again). The
// gateway keeps the outcome, keeps the key held and retries the write: a client that waits gets
// the answer once it is recorded; one whose wait (record_wait) passes first gets 503
// outcome-not-recorded, and its retry gets the recorded answer. The upstream runs once.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gateway_fixture.h"
#include "store_faults.h"

namespace idem::e2e {
namespace {

class E2E_SUITE(OutcomeKeptE2E) : public GatewayFixture {
 protected:
  // The flags that make a store fault show within the tests' bounds.
  std::vector<std::string> FaultFlags(const std::string& record_wait) {
    return {"--lock-timeout", OnPostgres() ? "1s" : "200ms", "--record-wait", record_wait};
  }

  // Makes every store write fail until StoreBack(); reads go on on SQLite.
  void StoreDown() {
#ifndef IDEM_E2E_POSTGRES
    lock_.emplace(dir_ + "/idem.db");
    ASSERT_TRUE(lock_->locked());
#else
    ASSERT_TRUE(PgFixture("pause"));
#endif
  }
  void StoreBack() {
#ifndef IDEM_E2E_POSTGRES
    lock_.reset();
#else
    ASSERT_TRUE(PgFixture("resume"));
#endif
  }

  // Sends a guarded POST held by the upstream until ReleaseHeld(); returns once the upstream has
  // it.
  void PostHeld(const std::string& key) {
    call_ = std::thread([this, key] {
      held_answer_ = Post(key, kBody, {{"X-Charges-Hold", "h"}});
    });
    ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  }
  void ReleaseHeld() { Send(charges_port_, "POST", "/release/h"); }
  Response HeldAnswer() {
    call_.join();
    return held_answer_;
  }

  void TearDown() override {
    if (call_.joinable()) {
      ReleaseHeld();
      call_.join();
    }
    GatewayFixture::TearDown();
  }

#ifndef IDEM_E2E_POSTGRES
  std::optional<WriteLockHolder> lock_;
#endif
  std::thread call_;
  Response held_answer_;
};
#define OutcomeKeptE2E E2E_SUITE(OutcomeKeptE2E)

TEST_F(OutcomeKeptE2E, AnOutcomeIsRecordedOnceTheStoreIsBackWhileItsClientWaits) {
  StartGateway(FaultFlags("30s"));
  PostHeld("kept");
  StoreDown();
  ReleaseHeld();  // the upstream answers; its outcome cannot be written
  // The outcome is kept and its write retried (on the old code the client got the unrecorded
  // answer at once and nothing was retried).
  EXPECT_TRUE(Eventually([&] { return Metric("idem_outcome_record_retries_total") >= 2; },
                         std::chrono::seconds(10)));
  EXPECT_EQ(Metric("idem_outcomes_pending"), 1);
  StoreBack();
  const Response answer = HeldAnswer();
  EXPECT_EQ(answer.status, 201) << answer.body << answer.error;
  EXPECT_EQ(answer.HeaderCount("Idempotent-Replayed"), 0);
  const Response retry = Post("kept");
  EXPECT_EQ(retry.status, 201) << retry.body;
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(retry.body, answer.body);
  EXPECT_EQ(Stat("calls"), 1);
  EXPECT_EQ(Metric("idem_outcomes_pending"), 0);
}

TEST_F(OutcomeKeptE2E, PastRecordWaitTheClientGets503AndItsRetryGetsTheRecordedAnswer) {
  StartGateway(FaultFlags("1s"));
  PostHeld("late");
  StoreDown();
  ReleaseHeld();
  const Response answer = HeldAnswer();
  ExpectProblem(answer, 503);
  EXPECT_NE(answer.body.find("outcome-not-recorded"), std::string::npos) << answer.body;
  EXPECT_GE(std::atoi(answer.Header("Retry-After").c_str()), 1) << answer.Header("Retry-After");
  // A retry while the store is down is not forwarded (the claim cannot be written, or the store
  // shows the key held by the first request).
  const Response meanwhile = Post("late");
  EXPECT_TRUE(meanwhile.status == 503 || meanwhile.status == 409) << meanwhile.status;
  EXPECT_EQ(Stat("calls"), 1);
  StoreBack();
  Response retry;
  ASSERT_TRUE(Eventually([&] {
    retry = Post("late");
    return retry.status == 201;
  }));
  EXPECT_EQ(retry.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1);
  EXPECT_EQ(Stat("charges"), 1);
}

// The runbook watches idem_outcomes_pending against the configured bound: /metrics carries the
// bound itself (idem_max_pending_outcomes, idem_max_pending_bytes), and once the count reaches it
// new guarded requests are refused, naming the outcomes held, before anything is forwarded.
TEST_F(OutcomeKeptE2E, ThePendingBoundsAreGaugesAndTheCountReachingOneRefusesNewRequests) {
  std::vector<std::string> flags = FaultFlags("30s");
  flags.insert(flags.end(), {"--max-pending-outcomes", "1", "--max-pending-bytes", "3MiB"});
  StartGateway(flags);
  EXPECT_EQ(Metric("idem_max_pending_outcomes"), 1);
  EXPECT_EQ(Metric("idem_max_pending_bytes"), 3 << 20);
  EXPECT_EQ(Metric("idem_outcomes_pending"), 0);
  PostHeld("bound");
  StoreDown();
  ReleaseHeld();
  ASSERT_TRUE(Eventually([&] { return Metric("idem_outcomes_pending") == 1; },
                         std::chrono::seconds(10)));
  EXPECT_EQ(Metric("idem_outcomes_pending"), Metric("idem_max_pending_outcomes"));
  const Response refused = Post("another");
  ExpectProblem(refused, 503);
  EXPECT_NE(refused.body.find("too many outcomes"), std::string::npos) << refused.body;
  EXPECT_EQ(Stat("calls"), 1);
  StoreBack();
  EXPECT_EQ(HeldAnswer().status, 201);
  EXPECT_TRUE(Eventually([&] { return Metric("idem_outcomes_pending") == 0; }));
  EXPECT_EQ(Metric("idem_max_pending_outcomes"), 1);
}

}  // namespace
}  // namespace idem::e2e
