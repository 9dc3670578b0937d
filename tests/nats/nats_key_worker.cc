// idem-nats-key-worker: one process of the two-process NATS fault tests (nats_fault_test.cc). Its
// threads claim and complete keys in lease mode, running an effect between claim and completion
// that appends one line to an append-only file, so that the test sees every effect that ran.
//
//   idem-nats-key-worker URI NAME THREADS KEYS LEASE_MS EFFECTS_FILE EFFECT_MS SLOW_FROM
//
// Thread t handles keys t, t+THREADS, t+2*THREADS, ... (names "key-NNNN") in order; another
// worker process given the same THREADS contends for the same keys at about the same time. For a
// key, a thread:
//   - claims it (owner NAME-tT); an in_progress record of its own (a claim whose answer was lost)
//     is its own claim; another's live lease is waited for, another's lapsed lease taken over;
//   - runs the effect: appends "KEY OWNER FENCE\n" to EFFECTS_FILE with one O_APPEND write; the
//     effects of keys SLOW_FROM .. SLOW_FROM+THREADS-1 (one per thread) then take EFFECT_MS more
//     (a slow upstream call, during which the key is held; SLOW_FROM -1: none); a negative
//     EFFECT_MS instead makes this process wait, before its first claim of those keys, until a
//     read finds another's record (for at most -EFFECT_MS), so that another process with slow
//     effects claims them first however far apart the two processes' threads run;
//   - completes with the body "key=KEY by=OWNER fence=FENCE"; a refused completion (Aborted) is
//     checked with a read: the record finished with its own fence was an earlier attempt of its
//     own whose answer was lost; anything else is a key it lost (it never writes again).
// Unavailable is retried after a short pause until the run's deadline.
//
// Prints on stdout, after every event: "stat CLAIMED COMPLETED TAKEOVERS LOST UNAVAILABLE FINISHED
// RESUMED CONFIRMED SLOW WAITING", totals of this process: CLAIMED, COMPLETED and TAKEOVERS count
// writes the store acknowledged; RESUMED claims and CONFIRMED completions of its own whose answer
// was lost, found by a read; FINISHED keys done with (by anyone); SLOW threads inside a slow
// effect; WAITING threads waiting for another's live lease. "error TEXT"
// for an unexpected error. Exit status: 0 every key finished; 1 an unexpected error; 2 bad
// arguments; 3 the deadline passed.
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "idem/store.h"

namespace {

using namespace std::chrono_literals;

constexpr auto kDeadline = 240s;
constexpr char kFingerprint[] = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

struct Config {
  std::string uri;
  std::string name;
  int threads = 0;
  int keys = 0;
  std::chrono::milliseconds lease{0};
  std::chrono::milliseconds effect{0};
  int slow_from = -1;
  int effects_fd = -1;
};

struct Counters {
  std::atomic<int64_t> claimed{0}, completed{0}, takeovers{0}, lost{0}, unavailable{0}, finished{0},
      resumed{0}, confirmed{0}, slow{0}, waiting{0};
};

std::mutex out_mu;
void Print(const std::string& line) {
  std::lock_guard<std::mutex> lock(out_mu);
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

void Report(Counters& c, std::atomic<int64_t>& counter, int64_t delta = 1) {
  counter += delta;
  Print(fmt::format("stat {} {} {} {} {} {} {} {} {} {}", c.claimed.load(), c.completed.load(),
                    c.takeovers.load(), c.lost.load(), c.unavailable.load(), c.finished.load(),
                    c.resumed.load(), c.confirmed.load(), c.slow.load(), c.waiting.load()));
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

[[noreturn]] void Fail(const std::string& what, const absl::Status& status) {
  Print(fmt::format("error {}: {}", what, status.ToString()));
  std::_Exit(1);  // other threads still use the store: no static destructors
}

class KeyRunner {
 public:
  KeyRunner(idem::Store& store, const Config& config, int thread, Counters& counters)
      : store_(store),
        config_(config),
        owner_(fmt::format("{}-t{}", config.name, thread)),
        counters_(counters),
        deadline_(std::chrono::steady_clock::now() + kDeadline) {}

  void Run(int k) {
    const idem::Scope scope{"t", fmt::format("key-{:04d}", k)};
    const bool band = k >= config_.slow_from && k < config_.slow_from + config_.threads;
    if (band && config_.effect.count() < 0) AwaitAnotherClaim(scope);
    const int64_t fence = Acquire(scope);
    if (fence == 0) return;  // finished by another
    const std::string line = fmt::format("{} {} {}\n", scope.key, owner_, fence);
    if (write(config_.effects_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      Fail("effect", absl::InternalError("write to the effects file failed"));
    }
    if (band && config_.effect.count() > 0) {
      Report(counters_, counters_.slow);
      std::this_thread::sleep_for(config_.effect);
      Report(counters_, counters_.slow, -1);
    }
    Finish(scope, fence);
  }

 private:
  // Returns the fence this thread holds the key with, or 0 when the key is finished.
  int64_t Acquire(const idem::Scope& scope) {
    const idem::ClaimRequest request{scope, kFingerprint, owner_, config_.lease};
    while (true) {
      absl::StatusOr<idem::ClaimResult> claim = store_.Claim(request);
      if (!Retry(claim.status(), "claim")) continue;
      const idem::KeyRecord& record = claim->record;
      const bool live = record.state == idem::KeyState::kInProgress && record.owner != owner_ &&
                        record.lease_until_ms >= NowMs();
      Waiting(live);
      if (claim->claimed) {
        Report(counters_, counters_.claimed);
        return record.fence;
      }
      if (record.state == idem::KeyState::kInProgress && record.owner == owner_) {
        Report(counters_, counters_.resumed);
        return record.fence;
      }
      if (record.state != idem::KeyState::kInProgress) {
        Report(counters_, counters_.finished);
        return 0;
      }
      if (live) {  // another's live lease: wait for its outcome
        Pause();
        continue;
      }
      absl::StatusOr<idem::KeyRecord> taken = store_.TakeOver(request, record.fence);
      if (taken.ok()) {
        Report(counters_, counters_.takeovers);
        return taken->fence;
      }
      if (!absl::IsAborted(taken.status()) && !absl::IsNotFound(taken.status())) {
        Retry(taken.status(), "take over");
      }
    }
  }

  // Polls until a read finds `scope` recorded (by another process: this one has not claimed it),
  // for at most -EFFECT_MS.
  void AwaitAnotherClaim(const idem::Scope& scope) {
    const auto until = std::chrono::steady_clock::now() - config_.effect;
    while (std::chrono::steady_clock::now() < until) {
      absl::StatusOr<idem::KeyRecord> got = store_.Get(scope);
      if (got.ok()) return;
      if (!absl::IsNotFound(got.status())) Retry(got.status(), "read before a claim");
      std::this_thread::sleep_for(10ms);
    }
  }

  // Counts this thread in WAITING while `now` holds.
  void Waiting(bool now) {
    if (now == waiting_) return;
    waiting_ = now;
    Report(counters_, counters_.waiting, now ? 1 : -1);
  }

  void Finish(const idem::Scope& scope, int64_t fence) {
    const idem::StoredResponse body{
        200, {}, fmt::format("key={} by={} fence={}", scope.key, owner_, fence)};
    while (true) {
      const absl::Status done = store_.Complete(scope, fence, body);
      if (done.ok()) break;
      if (!absl::IsAborted(done)) {
        Retry(done, "complete");
        continue;
      }
      absl::StatusOr<idem::KeyRecord> got = store_.Get(scope);
      if (!Retry(got.status(), "read after a refused completion")) continue;
      if (got->state == idem::KeyState::kCompleted && got->fence == fence && got->owner == owner_) {
        Report(counters_, counters_.confirmed);  // an earlier attempt went through, unanswered
      } else {
        Report(counters_, counters_.lost);
      }
      Report(counters_, counters_.finished);
      return;
    }
    Report(counters_, counters_.completed);
    Report(counters_, counters_.finished);
  }

  // true when `status` is OK; counts and pauses on Unavailable (false: try again); exits on any
  // other error or past the deadline.
  bool Retry(const absl::Status& status, const char* what) {
    if (status.ok()) return true;
    if (!absl::IsUnavailable(status)) Fail(fmt::format("{} by {}", what, owner_), status);
    Report(counters_, counters_.unavailable);
    Pause();
    return false;
  }

  void Pause() {
    if (std::chrono::steady_clock::now() > deadline_) {
      Print(fmt::format("error deadline passed in {}", owner_));
      std::_Exit(3);
    }
    std::this_thread::sleep_for(10ms);
  }

  idem::Store& store_;
  const Config& config_;
  const std::string owner_;
  Counters& counters_;
  const std::chrono::steady_clock::time_point deadline_;
  bool waiting_ = false;
};

int Run(const Config& config) {
  idem::StoreOptions options;
  options.lock_timeout = 2s;
  absl::StatusOr<std::unique_ptr<idem::Store>> store = idem::OpenStore(config.uri, options);
  if (!store.ok()) Fail("open", store.status());
  Counters counters;
  std::vector<std::thread> threads;
  for (int t = 0; t < config.threads; ++t) {
    threads.emplace_back([&, t] {
      KeyRunner runner(**store, config, t, counters);
      for (int k = t; k < config.keys; k += config.threads) runner.Run(k);
    });
  }
  for (std::thread& t : threads) t.join();
  return counters.finished.load() == config.keys ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fputs(
        "usage: idem-nats-key-worker URI NAME THREADS KEYS LEASE_MS EFFECTS_FILE EFFECT_MS "
        "SLOW_FROM\n",
        stderr);
    return 2;
  }
  Config config;
  config.uri = argv[1];
  config.name = argv[2];
  config.threads = std::atoi(argv[3]);
  config.keys = std::atoi(argv[4]);
  config.lease = std::chrono::milliseconds(std::atoll(argv[5]));
  config.effect = std::chrono::milliseconds(std::atoll(argv[7]));
  config.slow_from = std::atoi(argv[8]);
  if (config.threads <= 0 || config.keys <= 0 || config.lease.count() <= 0) {
    std::fputs("idem-nats-key-worker: THREADS, KEYS and LEASE_MS must be positive\n", stderr);
    return 2;
  }
  config.effects_fd = open(argv[6], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (config.effects_fd < 0) {
    std::perror(argv[6]);
    return 2;
  }
  return Run(config);
}
