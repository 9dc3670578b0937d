// The group-committing KeyService with several writers: batches of different keys are in flight
// at once, one key's writes stay in the order submitted, a failed batch reports to its own
// callers only, and shutdown drains every writer.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#pragma GCC diagnostic pop

#include "gateway/group_commit_key_service.h"
#include "gateway/testing/forwarding_store.h"
#include "gateway/testing/gated_store.h"
#include "gateway/testing/run_key_ops.h"
#include "guard/temp_sqlite_store.h"

namespace idem::gateway {
namespace {

using namespace std::chrono_literals;

KeyOp Claim(std::string key) {
  return {.kind = KeyOp::Kind::kClaim,
          .scope = {"", std::move(key)},
          .fingerprint = "f",
          .owner = "me",
          .lease = Millis(60'000)};
}

// The first key "<prefix>-N" that `writers` writers give to writer `writer`.
std::string KeyOfWriter(const std::string& prefix, size_t writer, int writers) {
  for (int n = 0;; ++n) {
    std::string key = fmt::format("{}-{}", prefix, n);
    if (WriterOf({"", key}, writers) == writer) return key;
  }
}

// Records each write's key and fence in the order the store is handed them, and answers every
// write OK without storing anything.
class RecordingStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (const LeaseWrite& w : writes) fences_[w.scope.key].push_back(w.fence);
    return std::vector<LeaseWriteResult>(writes.size());
  }
  std::map<std::string, std::vector<int64_t>> fences() {
    std::lock_guard<std::mutex> lock(mu_);
    return fences_;
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<int64_t>> fences_;
};

// Takes at least `commit` per batch (a slow durable commit) and records each batch's writes as
// "key:claim" or "key:complete".
class SlowStore final : public testing::ForwardingStore {
 public:
  SlowStore(Store& real, Millis commit) : ForwardingStore(real), commit_(commit) {}
  absl::StatusOr<std::vector<LeaseWriteResult>> ApplyLeaseBatch(
      std::span<const LeaseWrite> writes) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++started_;
    }
    started_cv_.notify_all();
    std::this_thread::sleep_for(commit_);  // the commit's own time, not a synchronisation
    std::lock_guard<std::mutex> lock(mu_);
    std::set<std::string>& keys = batches_.emplace_back();
    for (const LeaseWrite& w : writes)
      keys.insert(w.scope.key + (w.kind == LeaseWrite::Kind::kClaim ? ":claim" : ":complete"));
    return real_.ApplyLeaseBatch(writes);
  }
  // Returns once `n` batches have reached the store (each then takes the commit's time).
  void WaitUntilStarted(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    started_cv_.wait(lock, [&] { return started_ >= n; });
  }
  // The keys of every batch so far, in the order committed.
  std::vector<std::set<std::string>> batches() {
    std::lock_guard<std::mutex> lock(mu_);
    return batches_;
  }

 private:
  const Millis commit_;
  std::mutex mu_;
  std::condition_variable started_cv_;
  int started_ = 0;  // batches that reached ApplyLeaseBatch
  std::vector<std::set<std::string>> batches_;
};

// The batches' writes, in commit order: "[first:claim] [a:claim b:claim] ...".
std::string Describe(const std::vector<std::set<std::string>>& batches) {
  std::string out;
  for (const std::set<std::string>& batch : batches) {
    out += out.empty() ? "[" : " [";
    for (const std::string& write : batch) out += (out.back() == '[' ? "" : " ") + write;
    out += "]";
  }
  return out;
}

class GroupCommitWritersTest : public ::idem::testing::TempSqliteStoreTest {};

TEST(WriterOf, SpreadsKeysOverEveryWriterAndAlwaysGivesOneKeyTheSameWriter) {
  std::vector<int> per_writer(4, 0);
  for (int n = 0; n < 400; ++n) {
    const Scope scope{"tenant", fmt::format("k{}", n)};
    const size_t writer = WriterOf(scope, 4);
    ASSERT_LT(writer, 4u);
    EXPECT_EQ(WriterOf(scope, 4), writer);
    ++per_writer[writer];
  }
  for (int count : per_writer) EXPECT_GT(count, 50);
  EXPECT_EQ(WriterOf({"t", "k"}, 1), 0u);
}

// Four writers, one key for each: four batches wait at the store's door at the same time.
TEST_F(GroupCommitWritersTest, SeveralWritersKeepSeveralBatchesInFlight) {
  testing::GatedStore gated(*store_);
  Metrics metrics;
  auto service = NewGroupCommitKeyService(gated, metrics, {.writers = 4});
  std::vector<KeyOp> ops;
  for (size_t w = 0; w < 4; ++w) ops.push_back(Claim(KeyOfWriter("k", w, 4)));
  bool all_held = false;
  std::vector<KeyOpResult> results = testing::RunKeyOps(*service, std::move(ops), [&] {
    all_held = gated.WaitHeld(4);
    gated.Open();
  });
  EXPECT_TRUE(all_held) << "fewer than four batches reached the store at once";
  for (const KeyOpResult& r : results) EXPECT_TRUE(r.claimed) << r.status;
  service->Shutdown();
  EXPECT_EQ(metrics.commits.load(), 4u);
  EXPECT_EQ(metrics.batch_sizes.count(), 4u);
}

// Many keys, each with 20 writes submitted back to back without waiting (the fence numbers
// them): the store is handed every key's writes in the order they were submitted.
TEST_F(GroupCommitWritersTest, OneKeysWritesReachTheStoreInTheOrderSubmitted) {
  RecordingStore recording(*store_);
  Metrics metrics;
  auto service = NewGroupCommitKeyService(recording, metrics, {.max_batch = 8, .writers = 4});
  std::vector<KeyOp> ops;
  for (int64_t seq = 0; seq < 20; ++seq) {
    for (int k = 0; k < 31; ++k)
      ops.push_back(
          {.kind = KeyOp::Kind::kHeartbeat, .scope = {"", fmt::format("k{}", k)}, .fence = seq});
  }
  testing::RunKeyOps(*service, std::move(ops));
  service->Shutdown();
  const std::map<std::string, std::vector<int64_t>> fences = recording.fences();
  ASSERT_EQ(fences.size(), 31u);
  std::vector<int64_t> expected(20);
  for (int64_t seq = 0; seq < 20; ++seq) expected[static_cast<size_t>(seq)] = seq;
  for (const auto& [key, seen] : fences) EXPECT_EQ(seen, expected) << key;
  EXPECT_EQ(metrics.batch_sizes.sum(), 620u);
  EXPECT_EQ(metrics.commits.load(), metrics.batch_sizes.count());
}

// A batch the store refuses reports Unavailable to the callers in it and to no one else: the
// other writer's keys are claimed, and nothing of the failed batch is stored.
TEST_F(GroupCommitWritersTest, AFailedBatchReportsOnlyToItsOwnCallers) {
  const std::string poison = KeyOfWriter("poison", 0, 2);
  testing::GatedStore gated(*store_, poison);
  Metrics metrics;
  auto service = NewGroupCommitKeyService(gated, metrics, {.writers = 2});
  std::vector<KeyOp> ops;
  for (int n = 0; n < 20; ++n) ops.push_back(Claim(fmt::format("k{}", n)));
  ops.push_back(Claim(poison));  // queued behind the batches held at the door
  std::vector<KeyOpResult> results = testing::RunKeyOps(*service, std::move(ops), [&] {
    EXPECT_TRUE(gated.WaitHeld(1));
    gated.Open();
  });
  service->Shutdown();
  const std::set<std::string> failed = gated.failed_keys();
  ASSERT_TRUE(failed.contains(poison));
  EXPECT_EQ(results[20].status.code(), absl::StatusCode::kUnavailable);
  int other_writer = 0;
  for (int n = 0; n < 20; ++n) {
    const std::string key = fmt::format("k{}", n);
    const KeyOpResult& r = results[static_cast<size_t>(n)];
    if (failed.contains(key)) {
      EXPECT_EQ(r.status.code(), absl::StatusCode::kUnavailable) << key;
      EXPECT_EQ(store_->Get({"", key}).status().code(), absl::StatusCode::kNotFound) << key;
    } else {
      EXPECT_TRUE(r.status.ok() && r.claimed) << key << ": " << r.status;
    }
    if (WriterOf({"", key}, 2) == 1) {
      ++other_writer;
      EXPECT_FALSE(failed.contains(key)) << key << " shared a batch with another writer's key";
    }
  }
  EXPECT_GT(other_writer, 0);
  EXPECT_GE(metrics.failed_commits.load(), 1u);
}

// Shutdown while every writer holds a batch at the store's door: it returns only once every
// write queued on every writer was applied, and each caller has its result.
TEST_F(GroupCommitWritersTest, ShutdownFinishesTheWritesQueuedOnEveryWriter) {
  testing::GatedStore gated(*store_);
  Metrics metrics;
  auto service = NewGroupCommitKeyService(gated, metrics, {.writers = 3});
  boost::asio::io_context ioc;
  std::vector<KeyOpResult> results;
  for (size_t w = 0; w < 3; ++w) {
    for (int n = 0; n < 10; ++n) {
      service->Submit(Claim(KeyOfWriter(fmt::format("w{}-{}", w, n), w, 3)), ioc.get_executor(),
                      [&](KeyOpResult r) { results.push_back(std::move(r)); });
    }
  }
  EXPECT_TRUE(gated.WaitHeld(3));
  std::thread stopper([&] { service->Shutdown(); });
  gated.Open();
  stopper.join();  // returns once every queued write was applied
  ioc.run();
  ASSERT_EQ(results.size(), 30u);
  for (const KeyOpResult& r : results) EXPECT_TRUE(r.claimed) << r.status;
  EXPECT_EQ(metrics.batch_sizes.sum(), 30u);
  EXPECT_EQ(metrics.commits.load(), metrics.batch_sizes.count());
}

// Claims keys a and b in one batch (behind a first one); once claimed, a's holder writes its
// outcome at once and b's `b_after` later (its upstream was slower). Returns the batches.
std::vector<std::set<std::string>> TwoOutcomesApart(Store& store, Millis b_after,
                                                    Millis max_linger) {
  SlowStore slow(store, Millis(200));
  Metrics metrics;
  auto service = NewGroupCommitKeyService(slow, metrics, {.max_linger = max_linger});
  boost::asio::io_context ioc;
  boost::asio::steady_timer later(ioc);
  int outcomes = 0;
  auto complete = [&](const std::string& key, int64_t fence) {
    service->Submit({.kind = KeyOp::Kind::kComplete, .scope = {"", key}, .fence = fence},
                    ioc.get_executor(), [&](KeyOpResult r) {
                      EXPECT_TRUE(r.status.ok()) << r.status;
                      ++outcomes;
                    });
  };
  service->Submit(Claim("first"), ioc.get_executor(), [](KeyOpResult) {});
  // a and b queue up while the first batch commits, so that one batch claims both (else the
  // writer may take a with "first" and b after it).
  slow.WaitUntilStarted(1);
  service->Submit(Claim("a"), ioc.get_executor(),
                  [&](KeyOpResult r) { complete("a", r.record.fence); });
  service->Submit(Claim("b"), ioc.get_executor(), [&](KeyOpResult r) {
    later.expires_after(b_after);
    later.async_wait(
        [&, fence = r.record.fence](boost::system::error_code) { complete("b", fence); });
  });
  auto work = boost::asio::make_work_guard(ioc);
  while (outcomes < 2) ioc.run_one();
  service->Shutdown();
  return slow.batches();
}

// The writer, expecting two writes from the batch that answered both claims, waits for b's
// outcome (its commits take 200 ms, so it lingers up to 100 ms) and commits both outcomes in one
// batch, rather than a's alone and b's after it.
TEST_F(GroupCommitWritersTest, AWriterLingersForTheWritesItsLastBatchsAnswersBring) {
  const std::vector<std::set<std::string>> batches =
      TwoOutcomesApart(*store_, Millis(5), Millis(1000));
  ASSERT_FALSE(batches.empty());
  EXPECT_TRUE(batches.back().contains("a:complete") && batches.back().contains("b:complete"))
      << "a's and b's outcomes were committed apart: " << Describe(batches);
}

// With max_linger 0 the writer never waits: b's outcome, 50 ms later (while a's commits), gets a
// commit of its own.
TEST_F(GroupCommitWritersTest, AWriterWithoutLingerCommitsWhatIsQueued) {
  const std::vector<std::set<std::string>> batches =
      TwoOutcomesApart(*store_, Millis(50), Millis(0));
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(batches.back(), (std::set<std::string>{"b:complete"}));
}

}  // namespace
}  // namespace idem::gateway
