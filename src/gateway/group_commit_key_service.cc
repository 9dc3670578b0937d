#include "gateway/group_commit_key_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/post.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {
namespace {

struct Item {
  KeyOp op;
  boost::asio::any_io_executor executor;
  KeyService::Done done;
};

// Hands `result` to the item's caller on its own executor.
void Deliver(Item& item, KeyOpResult result) {
  boost::asio::post(item.executor,
                    [done = std::move(item.done), result = std::move(result)]() mutable {
                      done(std::move(result));
                    });
}

// Hands each item its result, with one post per distinct executor rather than one per item: a
// post from this thread may wake an io thread, and a batch's callers share a few io threads.
void DeliverAll(std::vector<Item>& items, std::vector<KeyOpResult> results) {
  std::vector<bool> sent(items.size(), false);
  for (size_t first = 0; first < items.size(); ++first) {
    if (sent[first]) continue;
    std::vector<std::pair<KeyService::Done, KeyOpResult>> group;
    for (size_t i = first; i < items.size(); ++i) {
      if (sent[i] || items[i].executor != items[first].executor) continue;
      group.emplace_back(std::move(items[i].done), std::move(results[i]));
      sent[i] = true;
    }
    boost::asio::post(items[first].executor, [group = std::move(group)]() mutable {
      for (auto& [done, result] : group) done(std::move(result));
    });
  }
}

KeyOpResult RunGet(Store& store, const Scope& scope) {
  absl::StatusOr<KeyRecord> record = store.Get(scope);
  if (!record.ok()) return {.status = record.status()};
  return {.record = std::move(*record)};
}

// One FIFO queue with its stop flag; Take blocks until there is work or the queue is stopped and
// empty (then it returns nothing).
class WorkQueue {
 public:
  bool Push(Item& item) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
    items_.push_back(std::move(item));
    // A taker lingering for `want_` items is woken once, when they are there, not by each one.
    if (items_.size() >= want_) cv_.notify_one();
    return true;
  }
  // Once there is work, waits at most `linger` more while fewer than `want` items are queued.
  std::vector<Item> Take(size_t most, size_t want = 1,
                         std::chrono::microseconds linger = std::chrono::microseconds(0)) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return stopping_ || !items_.empty(); });
    if (items_.size() < want && linger.count() > 0) {
      want_ = want;
      cv_.wait_for(lock, linger, [&] { return stopping_ || items_.size() >= want; });
      want_ = 1;
    }
    std::vector<Item> out;
    while (!items_.empty() && out.size() < most) {
      out.push_back(std::move(items_.front()));
      items_.pop_front();
    }
    return out;
  }
  void Stop() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> items_;
  size_t want_ = 1;  // items a waiting taker needs before it is woken
  bool stopping_ = false;
};

class GroupCommitKeyService final : public KeyService {
 public:
  GroupCommitKeyService(Store& store, Metrics& metrics, GroupCommitOptions options)
      : store_(store), metrics_(metrics), options_(options) {
    for (int i = 0; i < options_.writers; ++i) writes_.push_back(std::make_unique<WorkQueue>());
    for (int i = 0; i < options_.writers; ++i) {
      WorkQueue& queue = *writes_[static_cast<size_t>(i)];
      writers_.emplace_back([this, &queue] { Guarded("writer", [&] { WriteLoop(queue); }); });
    }
    for (int i = 0; i < options_.readers; ++i)
      readers_.emplace_back([this] { Guarded("reader", [this] { ReadLoop(); }); });
  }
  ~GroupCommitKeyService() override { Shutdown(); }

  void Submit(KeyOp op, boost::asio::any_io_executor executor, Done done) override {
    WorkQueue& queue =
        op.kind == KeyOp::Kind::kGet ? reads_ : *writes_[WriterOf(op.scope, options_.writers)];
    Item item{std::move(op), std::move(executor), std::move(done)};
    if (queue.Push(item)) return;
    KeyOpResult refused{.status = absl::UnavailableError("the gateway is shutting down")};
    refused.sent = std::move(item.op.response);
    Deliver(item, std::move(refused));
  }

  // Every queue stops taking new work first, then each thread finishes what its queue holds.
  void Shutdown() override {
    std::lock_guard<std::mutex> lock(shutdown_mu_);
    for (auto& queue : writes_) queue->Stop();
    reads_.Stop();
    for (std::thread& t : writers_) {
      if (t.joinable()) t.join();
    }
    for (std::thread& t : readers_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  // Runs a thread's loop; nothing escapes the thread.
  template <typename Loop>
  static void Guarded(const char* role, Loop loop) {
    try {
      loop();
    } catch (const std::exception& e) {
      spdlog::critical("key store {} thread stopped: {}", role, e.what());
    } catch (...) {
      spdlog::critical("key store {} thread stopped by an unknown exception", role);
    }
  }

  // Each answer of a batch soon brings its caller's next write (a claim's holder writes its
  // outcome; an outcome's client sends its next request). When fewer writes than that are queued
  // once there is one, the writer lingers for them, at most half its last commit's time (and
  // max_linger), so that one durable commit carries them rather than a commit each: under load,
  // fewer and larger batches, fewer syncs and wake-ups per write. Heartbeats bring nothing.
  void WriteLoop(WorkQueue& queue) {
    using std::chrono::microseconds;
    size_t expected = 1;
    microseconds linger(0);
    for (;;) {
      std::vector<Item> batch =
          queue.Take(options_.max_batch, std::min(expected, options_.max_batch), linger);
      if (batch.empty()) return;
      expected = static_cast<size_t>(std::count_if(batch.begin(), batch.end(), [](const Item& i) {
        return i.op.kind != KeyOp::Kind::kHeartbeat;
      }));
      const auto start = std::chrono::steady_clock::now();
      Commit(batch);
      const auto took = std::chrono::steady_clock::now() - start;
      linger = std::min(std::chrono::duration_cast<microseconds>(took) / 2, options_.max_linger);
    }
  }

  void ReadLoop() {
    for (;;) {
      std::vector<Item> items = reads_.Take(1);
      if (items.empty()) return;
      Deliver(items.front(), RunGet(store_, items.front().op.scope));
    }
  }

  // Applies the batch in one store call, then answers every caller in it.
  void Commit(std::vector<Item>& batch) {
    std::vector<LeaseWrite> writes;
    writes.reserve(batch.size());
    for (Item& item : batch) writes.push_back(ToLeaseWrite(std::move(item.op)));
    absl::StatusOr<std::vector<LeaseWriteResult>> results = store_.ApplyLeaseBatch(writes);
    metrics_.batch_sizes.Observe(batch.size());
    if (results.ok() && results->size() != batch.size())
      results = absl::InternalError("the store returned a batch of the wrong size");
    std::vector<KeyOpResult> answers;
    answers.reserve(batch.size());
    if (!results.ok()) {
      metrics_.failed_commits.fetch_add(1, std::memory_order_relaxed);
      spdlog::warn("a batch of {} key writes failed: {}", batch.size(),
                   results.status().ToString());
      answers.resize(batch.size(), {.status = results.status()});
    } else {
      metrics_.commits.fetch_add(1, std::memory_order_relaxed);
      for (LeaseWriteResult& result : *results)
        answers.push_back(FromLeaseWriteResult(std::move(result)));
    }
    // Each outcome goes back to its caller: it needs it after the write, and a copy would cost
    // its body and headers again.
    for (size_t i = 0; i < batch.size(); ++i) {
      if (writes[i].kind == LeaseWrite::Kind::kComplete ||
          writes[i].kind == LeaseWrite::Kind::kFailFinal)
        answers[i].sent = std::move(writes[i].response);
    }
    DeliverAll(batch, std::move(answers));
  }

  Store& store_;
  Metrics& metrics_;
  const GroupCommitOptions options_;
  std::vector<std::unique_ptr<WorkQueue>> writes_;  // one per writer; never resized
  WorkQueue reads_;
  std::mutex shutdown_mu_;
  std::vector<std::thread> writers_;
  std::vector<std::thread> readers_;
};

}  // namespace

size_t WriterOf(const Scope& scope, int writers) {
  if (writers <= 1) return 0;
  const size_t tenant = std::hash<std::string_view>{}(scope.tenant);
  const size_t key = std::hash<std::string_view>{}(scope.key);
  // Mixes the two so that ("a", "b") and ("b", "a") land apart.
  return (tenant * 0x9e3779b97f4a7c15ULL ^ key) % static_cast<size_t>(writers);
}

std::unique_ptr<KeyService> NewGroupCommitKeyService(Store& store, Metrics& metrics,
                                                     GroupCommitOptions options) {
  return std::make_unique<GroupCommitKeyService>(store, metrics, options);
}

}  // namespace idem::gateway
