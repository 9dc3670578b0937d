// The group-committing KeyService: each operation keeps its single call's meaning, results come
// back on the caller's executor, many callers' writes share a batch.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <functional>
#include <future>
#include <latch>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#pragma GCC diagnostic pop

#include "gateway/group_commit_key_service.h"
#include "gateway/testing/forwarding_store.h"
#include "gateway/testing/gated_store.h"
#include "gateway/testing/run_key_ops.h"
#include "guard/temp_sqlite_store.h"

namespace idem::gateway {
namespace {

KeyOp Claim(std::string key, std::string fp, Millis lease = Millis(1000)) {
  return {.kind = KeyOp::Kind::kClaim,
          .scope = {"", std::move(key)},
          .fingerprint = std::move(fp),
          .owner = "me",
          .lease = lease};
}

KeyOp Fenced(KeyOp::Kind kind, std::string key, int64_t fence, StoredResponse response = {}) {
  return {.kind = kind,
          .scope = {"", std::move(key)},
          .lease = Millis(1000),
          .fence = fence,
          .response = std::move(response)};
}

class KeyServiceTest : public ::idem::testing::TempSqliteStoreTest {
 protected:
  // Submits `op` and runs an io_context until its completion arrives there.
  KeyOpResult Run(KeyOp op) {
    boost::asio::io_context ioc;
    std::optional<KeyOpResult> got;
    const std::thread::id io_thread = std::this_thread::get_id();
    service_->Submit(std::move(op), ioc.get_executor(), [&](KeyOpResult r) {
      EXPECT_TRUE(std::this_thread::get_id() == io_thread);  // posted back to the caller's executor
      got = std::move(r);
    });
    auto work = boost::asio::make_work_guard(ioc);
    while (!got.has_value()) ioc.run_one();
    return std::move(*got);
  }

  void SetUp() override {
    TempSqliteStoreTest::SetUp();
    service_ = NewGroupCommitKeyService(*store_, metrics_, {.max_batch = 256, .readers = 2});
  }
  void TearDown() override {
    service_.reset();
    TempSqliteStoreTest::TearDown();
  }


  Metrics metrics_;
  std::unique_ptr<KeyService> service_;
};

// While one batch commits, every write that arrives waits and then goes in the next batch, in one
// commit; identical claims in it still have exactly one winner.
TEST_F(KeyServiceTest, WritesArrivingDuringACommitShareTheNextBatch) {
  testing::GatedStore gated(*store_);
  Metrics metrics;
  auto service = NewGroupCommitKeyService(gated, metrics);
  boost::asio::io_context ioc;
  service->Submit(Claim("first", "f"), ioc.get_executor(), [](KeyOpResult) {});
  ASSERT_TRUE(gated.WaitHeld());  // the writer holds a batch of one at the store's door
  std::vector<KeyOp> ops;
  for (int i = 0; i < 10; ++i) ops.push_back(Claim(fmt::format("k{}", i), "f"));
  ops.push_back(Claim("same", "f"));
  ops.push_back(Claim("same", "f"));
  std::vector<KeyOpResult> results =
      testing::RunKeyOps(*service, std::move(ops), [&] { gated.Open(); });
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(results[i].claimed) << results[i].status;
  EXPECT_TRUE(results[10].claimed);
  EXPECT_FALSE(results[11].claimed);
  EXPECT_EQ(results[11].record.fence, results[10].record.fence);
  service->Shutdown();
  EXPECT_EQ(metrics.commits.load(), 2u);
  EXPECT_EQ(metrics.batch_sizes.max(), 12u);
}

TEST_F(KeyServiceTest, AFailedBatchReportsUnavailableToEveryCallerInIt) {
  testing::GatedStore gated(*store_);
  Metrics metrics;
  auto service = NewGroupCommitKeyService(gated, metrics);
  std::thread opener([&] {
    EXPECT_TRUE(gated.WaitHeld());
    gated.Open(/*fail_every_batch=*/true);
  });
  std::vector<KeyOp> ops;
  for (int i = 0; i < 5; ++i) ops.push_back(Claim(fmt::format("k{}", i), "f"));
  std::vector<KeyOpResult> results = testing::RunKeyOps(*service, std::move(ops));
  opener.join();
  for (const KeyOpResult& r : results)
    EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable) << r.status;
  service->Shutdown();
  EXPECT_GE(metrics.failed_commits.load(), 1u);
  EXPECT_EQ(metrics.commits.load(), 0u);
  EXPECT_EQ(Run({.kind = KeyOp::Kind::kGet, .scope = {"", "k0"}}).status.code(),
            absl::StatusCode::kNotFound);  // nothing of the batch was stored
}

TEST_F(KeyServiceTest, ShutdownFinishesTheWritesAlreadyQueued) {
  testing::GatedStore gated(*store_);
  Metrics metrics;
  auto service = NewGroupCommitKeyService(gated, metrics);
  boost::asio::io_context ioc;
  int arrived = 0;
  std::vector<KeyOpResult> results;
  for (int i = 0; i < 4; ++i)
    service->Submit(Claim(fmt::format("k{}", i), "f"), ioc.get_executor(), [&](KeyOpResult r) {
      results.push_back(std::move(r));
      ++arrived;
    });
  ASSERT_TRUE(gated.WaitHeld());
  std::thread stopper([&] { service->Shutdown(); });
  gated.Open();
  stopper.join();  // returns once every queued write was applied
  ioc.run();
  ASSERT_EQ(arrived, 4);
  for (const KeyOpResult& r : results) EXPECT_TRUE(r.claimed) << r.status;
}

TEST_F(KeyServiceTest, FirstClaimWinsSecondSeesTheLiveRecordWithTheStoresTime) {
  KeyOpResult first = Run(Claim("k", "f"));
  ASSERT_TRUE(first.status.ok()) << first.status;
  EXPECT_TRUE(first.claimed);
  EXPECT_EQ(first.lease_until_ms, clock_.NowMillis() + 1000);
  EXPECT_EQ(first.now_ms, clock_.NowMillis());
  KeyOpResult second = Run(Claim("k", "f"));
  ASSERT_TRUE(second.status.ok());
  EXPECT_FALSE(second.claimed);
  EXPECT_EQ(second.record.fence, first.record.fence);
  EXPECT_EQ(second.record.lease_until_ms, clock_.NowMillis() + 1000);
}

TEST_F(KeyServiceTest, ClaimTakesOverALapsedLeaseOfTheSameRequestOnly) {
  KeyOpResult first = Run(Claim("k", "f"));
  clock_.Advance(Millis(1001));
  KeyOpResult other = Run(Claim("k", "g"));
  EXPECT_FALSE(other.claimed);  // another request never takes the key over
  KeyOpResult retry = Run(Claim("k", "f"));
  ASSERT_TRUE(retry.status.ok());
  EXPECT_TRUE(retry.claimed);
  EXPECT_TRUE(retry.taken_over);
  EXPECT_GT(retry.record.fence, first.record.fence);
  KeyOpResult late = Run(Fenced(KeyOp::Kind::kComplete, "k", first.record.fence, {.status = 200}));
  EXPECT_EQ(late.status.code(), absl::StatusCode::kAborted);  // the fence stops a late writer
}

TEST_F(KeyServiceTest, CompleteIsIdempotentAndAReaderReturnsTheStoredResponse) {
  KeyOpResult claim = Run(Claim("k", "f"));
  StoredResponse response{.status = 201, .headers = {{"Content-Type", "text/plain"}}, .body = "ok"};
  KeyOp done = Fenced(KeyOp::Kind::kComplete, "k", claim.record.fence, response);
  ASSERT_TRUE(Run(done).status.ok());
  EXPECT_TRUE(Run(done).status.ok());  // the same fence and outcome again: a lost reply retried
  KeyOpResult got = Run({.kind = KeyOp::Kind::kGet, .scope = {"", "k"}});
  ASSERT_TRUE(got.status.ok());
  EXPECT_EQ(got.record.state, KeyState::kCompleted);
  EXPECT_EQ(got.record.response, response);
}

// An outcome's response comes back with its result, written or not (a stale fence, after
// shutdown), so the caller keeps it without a copy.
TEST_F(KeyServiceTest, AnOutcomesResponseIsHandedBackWithItsResult) {
  KeyOpResult claim = Run(Claim("k", "f"));
  StoredResponse response{.status = 201, .headers = {{"Content-Type", "text/plain"}}, .body = "ok"};
  KeyOpResult done = Run(Fenced(KeyOp::Kind::kComplete, "k", claim.record.fence, response));
  ASSERT_TRUE(done.status.ok()) << done.status;
  EXPECT_EQ(done.sent, response);
  KeyOpResult stale = Run(Fenced(KeyOp::Kind::kFailFinal, "k", claim.record.fence + 1, response));
  EXPECT_EQ(stale.status.code(), absl::StatusCode::kAborted) << stale.status;
  EXPECT_EQ(stale.sent, response);
  service_->Shutdown();
  KeyOpResult refused = Run(Fenced(KeyOp::Kind::kComplete, "k", claim.record.fence, response));
  EXPECT_EQ(refused.status.code(), absl::StatusCode::kUnavailable) << refused.status;
  EXPECT_EQ(refused.sent, response);
}

TEST_F(KeyServiceTest, HeartbeatReturnsTheNewLeaseEndAndReleaseMakesTheKeyAbsent) {
  KeyOpResult claim = Run(Claim("k", "f"));
  clock_.Advance(Millis(300));
  KeyOpResult beat = Run(Fenced(KeyOp::Kind::kHeartbeat, "k", claim.record.fence));
  ASSERT_TRUE(beat.status.ok()) << beat.status;
  EXPECT_EQ(beat.lease_until_ms, clock_.NowMillis() + 1000);
  EXPECT_TRUE(Run(Fenced(KeyOp::Kind::kRelease, "k", claim.record.fence)).status.ok());
  EXPECT_EQ(Run({.kind = KeyOp::Kind::kGet, .scope = {"", "k"}}).status.code(),
            absl::StatusCode::kNotFound);
}

TEST_F(KeyServiceTest, AfterShutdownOperationsReportUnavailable) {
  service_->Shutdown();
  EXPECT_EQ(Run(Claim("k", "f")).status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(Run({.kind = KeyOp::Kind::kGet, .scope = {"", "k"}}).status.code(),
            absl::StatusCode::kUnavailable);
}

// Many threads claim and complete distinct keys and fight over shared ones at once: every result
// means what the single call would, and writes shared batches.
TEST_F(KeyServiceTest, ConcurrentCallersKeepSingleCallMeaningsAndShareBatches) {
  constexpr int kThreads = 16;
  constexpr int kRounds = 20;
  boost::asio::io_context ioc;
  auto work = boost::asio::make_work_guard(ioc);
  std::thread io([&] { ioc.run(); });
  std::mutex mu;
  std::map<std::string, int> winners;  // shared key -> callers that claimed it
  std::latch start(kThreads);
  auto blocking = [&](KeyOp op) {
    std::promise<KeyOpResult> promise;
    service_->Submit(std::move(op), ioc.get_executor(),
                     [&](KeyOpResult r) { promise.set_value(std::move(r)); });
    return promise.get_future().get();
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int r = 0; r < kRounds; ++r) {
        const std::string own = fmt::format("own-{}-{}", t, r);
        const std::string shared = fmt::format("shared-{}", r);
        KeyOpResult mine = blocking(Claim(own, "f", Millis(60'000)));
        KeyOpResult contested = blocking(Claim(shared, "f", Millis(60'000)));
        EXPECT_TRUE(mine.status.ok() && mine.claimed) << mine.status;
        ASSERT_TRUE(contested.status.ok()) << contested.status;
        EXPECT_TRUE(
            blocking(Fenced(KeyOp::Kind::kComplete, own, mine.record.fence, {200})).status.ok());
        if (contested.claimed) {
          std::lock_guard<std::mutex> lock(mu);
          ++winners[shared];
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  work.reset();
  io.join();
  ASSERT_EQ(winners.size(), static_cast<size_t>(kRounds));
  for (const auto& [key, count] : winners) EXPECT_EQ(count, 1) << key;  // exactly one winner each
  for (int t = 0; t < kThreads; ++t) {
    KeyOpResult got = Run({.kind = KeyOp::Kind::kGet, .scope = {"", fmt::format("own-{}-0", t)}});
    EXPECT_EQ(got.record.state, KeyState::kCompleted);
  }
  EXPECT_EQ(metrics_.batch_sizes.sum(), static_cast<uint64_t>(kThreads * kRounds * 3));
  EXPECT_EQ(metrics_.commits.load(), metrics_.batch_sizes.count());
}

}  // namespace
}  // namespace idem::gateway
