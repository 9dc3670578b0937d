// Keeping an outcome the store did not take at once (PendingOutcome, RecordOutcome): the write is
// retried until recorded, the client waits for it up to record_wait and never gets an unrecorded
// answer; a write applied but reported failed is confirmed by its idempotent retry; a moved fence
// drops the outcome; a release that finds the key gone counts as released. Over the real
// group-committing KeyService and a real SQLite store behind a store double that fails batches.
#include <gtest/gtest.h>

#include <mutex>
#include <optional>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/executor_work_guard.hpp>
#pragma GCC diagnostic pop

#include "gateway/gateway_context.h"
#include "gateway/group_commit_key_service.h"
#include "gateway/pending_outcome.h"
#include "gateway/record_outcome.h"
#include "gateway/testing/forwarding_store.h"
#include "guard/temp_sqlite_store.h"

namespace idem::gateway {
namespace {

// Fails the next N batches with Unavailable; when `applied`, each is applied first, as a store
// whose acknowledgement was lost (a connection cut during COMMIT).
class FaultyStore final : public ::idem::gateway::testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  void FailNext(int batches, bool applied) {
    std::lock_guard<std::mutex> lock(mu_);
    failing_ = batches;
    applied_ = applied;
  }
  // From now on refuses for ever (OutOfRange, nothing written) each outcome larger than `bytes`,
  // as the NATS store does past its servers' max_payload.
  void RefuseOutcomesOver(int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    refuse_over_ = bytes;
  }
  int refused() {
    std::lock_guard<std::mutex> lock(mu_);
    return refused_;
  }
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    bool applied = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (failing_ == 0) return refuse_over_ > 0 ? Refusing(writes) : real_.ApplyLeaseBatch(writes);
      --failing_;
      applied = applied_;
    }
    if (applied) (void)real_.ApplyLeaseBatch(writes);
    return absl::UnavailableError("the store's answer was lost");
  }

 private:
  // REQUIRES: mu_ held.
  std::vector<LeaseWriteResult> Refusing(std::span<const LeaseWrite> writes) {
    std::vector<LeaseWriteResult> out(writes.size());
    for (size_t i = 0; i < writes.size(); ++i) {
      const LeaseWrite& w = writes[i];
      if ((w.kind == LeaseWrite::Kind::kComplete || w.kind == LeaseWrite::Kind::kFailFinal) &&
          StoredResponseBytes(w.response) > refuse_over_) {
        ++refused_;
        out[i].status = absl::OutOfRangeError("the record takes more than the store keeps");
        continue;
      }
      auto one = real_.ApplyLeaseBatch(writes.subspan(i, 1));
      out[i] = one.ok() ? std::move((*one)[0]) : LeaseWriteResult{.status = one.status()};
    }
    return out;
  }

  std::mutex mu_;
  int failing_ = 0;
  bool applied_ = false;
  int64_t refuse_over_ = 0;
  int refused_ = 0;
};

class PendingOutcomeTest : public ::idem::testing::TempSqliteStoreTest {
 protected:
  void SetUp() override {
    TempSqliteStoreTest::SetUp();
    faulty_ = std::make_unique<FaultyStore>(*store_);
    keys_ = NewGroupCommitKeyService(*faulty_, metrics_, {.max_batch = 256, .readers = 1});
    cache_ = std::make_unique<ReplayCache>(1 << 20, clock_, metrics_);
    ctx_.reset(new GatewayContext{.config = config_,
                                  .keys = *keys_,
                                  .cache = *cache_,
                                  .metrics = metrics_,
                                  .in_flight = in_flight_});
  }
  void TearDown() override {
    ctx_.reset();
    keys_.reset();
    TempSqliteStoreTest::TearDown();
  }

  // Claims `key` straight on the store and holds it as Execute would; returns the ticket.
  uint64_t Hold(int64_t& fence) {
    auto claim = store_->Claim({.scope = scope_, .fingerprint = "fp", .owner = "me", .lease = 30s});
    EXPECT_TRUE(claim.ok() && claim->claimed);
    fence = claim.ok() ? claim->record.fence : 0;
    metrics_.keys_in_flight.fetch_add(1);
    return in_flight_.HoldKey(scope_, fence, std::chrono::steady_clock::now() + 30s);
  }

  // Runs RecordOutcome for `upstream` until the client's answer is there and no write is pending.
  GuardedAnswer Record(
      uint64_t ticket, int64_t fence, UpstreamAnswer upstream,
      const std::function<void()>& answered = [] {}) {
    asio::io_context ioc;
    std::optional<GuardedAnswer> got;
    asio::co_spawn(ioc, RecordOutcome(*ctx_, route_, guarded_, ticket, fence, std::move(upstream)),
                   [&](std::exception_ptr, GuardedAnswer a) { got = std::move(a); });
    auto work = asio::make_work_guard(ioc);
    while (!got.has_value()) ioc.run_one();
    answered();
    while (!in_flight_.HeldKeys().empty()) ioc.run_one();
    return *std::move(got);
  }

  // As Record, but gives up after `bound`: nullopt when the answer did not come or the key is
  // still held then (a write retried for ever).
  std::optional<GuardedAnswer> RecordWithin(uint64_t ticket, int64_t fence, UpstreamAnswer upstream,
                                            Millis bound) {
    asio::io_context ioc;
    std::optional<GuardedAnswer> got;
    asio::co_spawn(ioc, RecordOutcome(*ctx_, route_, guarded_, ticket, fence, std::move(upstream)),
                   [&](std::exception_ptr, GuardedAnswer a) { got = std::move(a); });
    auto work = asio::make_work_guard(ioc);
    const auto until = std::chrono::steady_clock::now() + bound;
    while ((!got.has_value() || !in_flight_.HeldKeys().empty()) &&
           std::chrono::steady_clock::now() < until)
      ioc.run_one_until(until);
    if (!in_flight_.HeldKeys().empty()) return std::nullopt;
    return got;
  }

  // An answer of about 2,000 bytes: more than a store refusing outcomes over 1,000 bytes keeps.
  static UpstreamAnswer LargeCreated() {
    return {.response = StoredResponse{.status = 201,
                                       .headers = {{"Content-Type", "application/json"}},
                                       .body = std::string(2000, 'x')}};
  }

  static UpstreamAnswer Created() {
    return {.response = StoredResponse{.status = 201,
                                       .headers = {{"Content-Type", "application/json"}},
                                       .body = R"({"id":"ch_1"})"}};
  }

  void ExpectSettled() {
    EXPECT_TRUE(in_flight_.HeldKeys().empty());
    EXPECT_EQ(metrics_.keys_in_flight.load(), 0);
    EXPECT_EQ(metrics_.outcomes_pending.load(), 0);
    EXPECT_EQ(metrics_.pending_bytes.load(), 0);
  }

  const Scope scope_{.tenant = "", .key = "order-1"};
  const GuardedRequest guarded_{.scope = scope_, .fingerprint = "fp"};  // outlives the coroutine
  Route route_;
  GatewayConfig config_{.record_wait = 10s};
  Metrics metrics_;
  InFlight in_flight_;
  std::unique_ptr<FaultyStore> faulty_;
  std::unique_ptr<KeyService> keys_;
  std::unique_ptr<ReplayCache> cache_;
  std::unique_ptr<GatewayContext> ctx_;
};

TEST_F(PendingOutcomeTest, AnOutcomeTheStoreRefusesIsRetriedUntilRecordedWhileTheClientWaits) {
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);
  faulty_->FailNext(3, false);  // the first write and two retries

  const GuardedAnswer answer = Record(ticket, fence, Created());

  EXPECT_EQ(answer.response.status, 201);
  EXPECT_EQ(answer.decision, Decision::kExecuted);
  EXPECT_EQ(metrics_.record_retries.load(), 3u);
  ExpectSettled();
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kCompleted);
  EXPECT_EQ(record->response.body, R"({"id":"ch_1"})");
  ASSERT_NE(cache_->Find(scope_), nullptr);  // a duplicate here is answered from it, recorded
}

TEST_F(PendingOutcomeTest, AnOutcomeAppliedButReportedUnavailableIsConfirmedByItsRetry) {
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);
  faulty_->FailNext(1, true);

  const GuardedAnswer answer = Record(ticket, fence, Created());

  EXPECT_EQ(answer.response.status, 201);
  EXPECT_EQ(metrics_.record_retries.load(), 1u);
  ExpectSettled();
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kCompleted);
  EXPECT_EQ(record->fence, fence);
}

// Past record_wait the client gets 503 outcome-not-recorded, never the unrecorded answer; the
// retries go on and record it afterwards.
TEST_F(PendingOutcomeTest, PastTheWaitTheClientGets503AndTheOutcomeIsStillRecorded) {
  config_.record_wait = 300ms;
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);
  faulty_->FailNext(1000000, false);

  const GuardedAnswer answer = Record(ticket, fence, Created(), [&] {
    EXPECT_EQ(metrics_.outcomes_pending.load(), 1);
    EXPECT_EQ(in_flight_.HeldKeys().size(), 1u);  // still held: heartbeats go on
    EXPECT_TRUE(in_flight_.Renewing(ticket));
    faulty_->FailNext(0, false);
  });

  EXPECT_EQ(answer.response.status, 503);
  EXPECT_NE(answer.response.body.find("outcome-not-recorded"), std::string::npos)
      << answer.response.body;
  ExpectSettled();
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kCompleted);
}

// The fence moved meanwhile (another holder took the key over): the retry is refused (Aborted),
// the outcome dropped, and the client told to retry (it then gets the new holder's answer).
TEST_F(PendingOutcomeTest, AMovedFenceDropsTheOutcomeAndTheClientGets503) {
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);
  faulty_->FailNext(1, false);

  const GuardedAnswer answer = Record(ticket, fence + 1, Created());

  EXPECT_EQ(answer.response.status, 503);
  EXPECT_NE(answer.response.body.find("lost its hold"), std::string::npos) << answer.response.body;
  ExpectSettled();
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kInProgress);
}

// A transient answer is released, not recorded; a release applied but reported failed is retried,
// and the retry finding the key gone counts as released. The client is not held back by it.
TEST_F(PendingOutcomeTest, AReleaseAppliedButReportedFailedCountsAsReleasedOnItsRetry) {
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);
  faulty_->FailNext(1, true);

  const GuardedAnswer answer =
      Record(ticket, fence, {.response = StoredResponse{.status = 503, .body = "busy"}});

  EXPECT_EQ(answer.response.status, 503);
  EXPECT_EQ(answer.decision, Decision::kTransient);
  EXPECT_EQ(metrics_.record_retries.load(), 1u);
  ExpectSettled();
  EXPECT_TRUE(absl::IsNotFound(store_->Get(scope_).status()));
}

// An upstream that ran the request but whose answer was cut off after its head: recorded as a
// failed_final 502 of its own type, never released.
TEST_F(PendingOutcomeTest, AnAnswerCutOffAfterItsHeadIsRecordedAs502NotKept) {
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);

  const GuardedAnswer answer =
      Record(ticket, fence,
             {.response = absl::UnavailableError("the connection closed"), .head_received = true});

  EXPECT_EQ(answer.response.status, 502);
  EXPECT_NE(answer.response.body.find("upstream-answer-not-kept"), std::string::npos);
  ExpectSettled();
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kFailedFinal);
  EXPECT_EQ(record->response.body, answer.response.body);
}

// An outcome the store refuses for ever (OutOfRange: larger than it keeps for one key, as on NATS
// past max_payload) is not a store fault: never retried, the 502 upstream-answer-not-kept is
// recorded as failed_final instead, and the client gets that at once.
TEST_F(PendingOutcomeTest, AnOutcomeTheStoreRefusesForEverIsRecordedAs502NotKeptNeverRetried) {
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);
  faulty_->RefuseOutcomesOver(1000);

  const std::optional<GuardedAnswer> answer = RecordWithin(ticket, fence, LargeCreated(), 5s);

  ASSERT_TRUE(answer.has_value()) << "the refused outcome was still being retried";
  EXPECT_EQ(answer->response.status, 502);
  EXPECT_NE(answer->response.body.find("upstream-answer-not-kept"), std::string::npos)
      << answer->response.body;
  EXPECT_EQ(answer->decision, Decision::kUpstreamError);
  EXPECT_EQ(faulty_->refused(), 1);
  EXPECT_EQ(metrics_.record_retries.load(), 0u);
  ExpectSettled();
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kFailedFinal);
  EXPECT_EQ(record->response.body, answer->response.body);
}

// The same when the refusal comes on a retry (the first write found the store down): the pending
// outcome is replaced by the 502 at once, not retried again.
TEST_F(PendingOutcomeTest, APendingOutcomeRefusedForEverOnItsRetryIsReplacedBy502NotKept) {
  int64_t fence = 0;
  const uint64_t ticket = Hold(fence);
  faulty_->FailNext(1, false);
  faulty_->RefuseOutcomesOver(1000);

  const std::optional<GuardedAnswer> answer = RecordWithin(ticket, fence, LargeCreated(), 5s);

  ASSERT_TRUE(answer.has_value()) << "the refused outcome was still being retried";
  EXPECT_EQ(answer->response.status, 502);
  EXPECT_NE(answer->response.body.find("upstream-answer-not-kept"), std::string::npos)
      << answer->response.body;
  EXPECT_EQ(faulty_->refused(), 1);
  EXPECT_EQ(metrics_.record_retries.load(), 1u);  // the store-down retry only
  ExpectSettled();
  auto record = store_->Get(scope_);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kFailedFinal);
  EXPECT_EQ(record->response.body, answer->response.body);
}

}  // namespace
}  // namespace idem::gateway
