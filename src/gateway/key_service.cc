#include "gateway/key_service.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wnull-dereference"
#include <boost/asio/post.hpp>
#pragma GCC diagnostic pop

namespace idem::gateway {
namespace {

// Claims the key, taking over a lapsed lease of the same request (the same fingerprint only: a
// lapsed lease of another request stays a mismatch).
KeyOpResult RunClaim(Store& store, const KeyOp& op, const Clock& clock) {
  ClaimRequest request{
      .scope = op.scope, .fingerprint = op.fingerprint, .owner = op.owner, .lease = op.lease};
  KeyOpResult result;
  for (int round = 0; round < 3; ++round) {
    absl::StatusOr<ClaimResult> claim = store.Claim(request);
    result.now_ms = clock.NowMillis();
    if (!claim.ok()) return {.status = claim.status(), .now_ms = result.now_ms};
    result.claimed = claim->claimed;
    result.record = std::move(claim->record);
    const KeyRecord& found = result.record;
    if (result.claimed || found.state != KeyState::kInProgress ||
        found.fingerprint != op.fingerprint || found.lease_until_ms > result.now_ms)
      return result;
    absl::StatusOr<KeyRecord> taken = store.TakeOver(request, found.fence);
    if (taken.ok())
      return {.claimed = true,
              .taken_over = true,
              .record = std::move(*taken),
              .now_ms = result.now_ms};
    if (absl::IsAborted(taken.status())) return result;  // another arrival took it first
    if (!absl::IsNotFound(taken.status())) return {.status = taken.status()};
  }
  return {.status = absl::AbortedError("the key changed hands repeatedly while being claimed"),
          .now_ms = result.now_ms};
}

KeyOpResult Run(Store& store, const KeyOp& op, const Clock& clock) {
  switch (op.kind) {
    case KeyOp::Kind::kClaim:
      return RunClaim(store, op, clock);
    case KeyOp::Kind::kHeartbeat:
      return {.status = store.Heartbeat(op.scope, op.fence, op.lease)};
    case KeyOp::Kind::kComplete:
      return {.status = store.Complete(op.scope, op.fence, op.response)};
    case KeyOp::Kind::kFailFinal:
      return {.status = store.FailFinal(op.scope, op.fence, op.response)};
    case KeyOp::Kind::kRelease:
      return {.status = store.Release(op.scope, op.fence)};
    case KeyOp::Kind::kGet: {
      absl::StatusOr<KeyRecord> record = store.Get(op.scope);
      if (!record.ok()) return {.status = record.status(), .now_ms = clock.NowMillis()};
      return {.record = std::move(*record), .now_ms = clock.NowMillis()};
    }
  }
  return {.status = absl::InternalError("key operation kind out of range")};
}

class ThreadPoolKeyService final : public KeyService {
 public:
  ThreadPoolKeyService(Store& store, const Clock& clock, int threads)
      : store_(store), clock_(clock) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }
  ~ThreadPoolKeyService() override { Shutdown(); }

  void Submit(KeyOp op, boost::asio::any_io_executor executor, Done done) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!stopping_) {
        queue_.push_back({std::move(op), std::move(executor), std::move(done)});
        cv_.notify_one();
        return;
      }
    }
    boost::asio::post(executor, [done = std::move(done)] {
      done({.status = absl::UnavailableError("the gateway is shutting down")});
    });
  }

  void Shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }

 private:
  struct Item {
    KeyOp op;
    boost::asio::any_io_executor executor;
    Done done;
  };

  void Work() {
    for (;;) {
      Item item;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        item = std::move(queue_.front());
        queue_.pop_front();
      }
      KeyOpResult result = Run(store_, item.op, clock_);
      boost::asio::post(item.executor,
                        [done = std::move(item.done), result = std::move(result)]() mutable {
                          done(std::move(result));
                        });
    }
  }

  Store& store_;
  const Clock& clock_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<KeyService> NewThreadPoolKeyService(Store& store, const Clock& clock, int threads) {
  return std::make_unique<ThreadPoolKeyService>(store, clock, threads);
}

}  // namespace idem::gateway
