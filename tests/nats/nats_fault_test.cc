// Faults of the three-node cluster at the scale, on the private "nats_quorum" cluster: two
// worker processes (idem-nats-key-worker) of 16 threads each claim and complete the same 2,000
// keys, each effect appending a line to its process's file, while the test kills, pauses and
// restarts servers. In every case, once the workers are done (CheckRun): every key is completed
// and replays its stored answer to a new claim, the answer names exactly one effect, and every
// other effect of a key belongs to a claim that lost the key and never completed it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "idem/store.h"
#include "nats_test_support.h"
#include "nats_worker_run.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using natstest::Fixture;
using natstest::Worker;
using natstest::WorkerRun;
using natstest::WorkerStats;

constexpr int kKeys = 2000;
constexpr int kThreads = 16;
// Bounds on each phase and on the end of a run: generous, for CI's loaded machines (a phase takes
// a few seconds on an idle one). Leases of 120 s never lapse within them, except where the test
// makes them short on purpose.
constexpr auto kPhaseBound = 120s;
constexpr auto kFinishBound = 180s;

// Holds while `field` summed over the workers is at least `at_least`.
auto TotalAtLeast(int64_t WorkerStats::*field, int64_t at_least) {
  return [=](const std::vector<Worker>& workers) {
    int64_t total = 0;
    for (const Worker& w : workers) total += w.stats.*field;
    return total >= at_least;
  };
}

class NatsTwoProcessFault : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::string> urls = natstest::ServerUrls(Fixture::kCluster);
    ASSERT_TRUE(urls.ok()) << urls.status();
    nodes_ = natstest::SplitUrls(*urls);
    ASSERT_EQ(nodes_.size(), 3u);
    bucket_ = natstest::FreshBucket("fault");
    uri_ = natstest::StoreUriOn(nodes_, "replicas=3&bucket=" + bucket_);
    // Every server up (a test before may have failed with some of them down), then wait until
    // the cluster serves: it may still be recovering from the test before (opening the store
    // creates the bucket).
    Cluster("heal", 0);
    if (HasFatalFailure()) return;
    absl::StatusOr<std::unique_ptr<Store>> store = absl::UnknownError("not opened");
    ASSERT_TRUE(natstest::Eventually(
        [&] {
          store = OpenStore(uri_);
          return store.ok();
        },
        kPhaseBound))
        << store.status();
    auto admin = natstest::Connect(*urls);
    ASSERT_TRUE(admin.ok()) << admin.status();
    ASSERT_TRUE(natstest::Eventually(
        [&] { return (leader_ = natstest::StreamLeader((*admin)->js(), "KV_" + bucket_)) > 0; },
        kPhaseBound));
    run_ = std::make_unique<WorkerRun>(::testing::TempDir() + bucket_, kThreads, kKeys);
    started_ = std::chrono::steady_clock::now();
  }

  void TearDown() override {
    if (run_ == nullptr) return;  // SetUp failed before the run existed: nothing ran
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started_);
    std::printf(
        "run and checks took %.1f s; claimed %lld, completed %lld, taken over %lld, "
        "lost %lld, unavailable %lld, resumed %lld, confirmed %lld\n",
        static_cast<double>(took.count()) / 1000,
        static_cast<long long>(run_->Total(&WorkerStats::claimed)),
        static_cast<long long>(run_->Total(&WorkerStats::completed)),
        static_cast<long long>(run_->Total(&WorkerStats::takeovers)),
        static_cast<long long>(run_->Total(&WorkerStats::lost)),
        static_cast<long long>(run_->Total(&WorkerStats::unavailable)),
        static_cast<long long>(run_->Total(&WorkerStats::resumed)),
        static_cast<long long>(run_->Total(&WorkerStats::confirmed)));
    run_.reset();  // kills workers a failed assertion left running
    if (paused_ != 0) Cluster("resume-node", paused_);  // a failed assertion left it paused
  }

  void Cluster(const char* command, int node) {
    ASSERT_TRUE(natstest::RunFixture(Fixture::kCluster, command, node).ok()) << command;
  }

  std::vector<std::string> nodes_;
  std::string bucket_;
  std::string uri_;
  int leader_ = 0;
  int paused_ = 0;  // a server paused and not resumed yet
  std::unique_ptr<WorkerRun> run_;
  std::chrono::steady_clock::time_point started_;
};

TEST_F(NatsTwoProcessFault, LeaderKilledAndRestartedMidRunEveryEffectRunsOnceNothingLost) {
  run_->Start("p1", uri_, 120s);
  run_->Start("p2", uri_, 120s);
  ASSERT_TRUE(run_->RunUntil(TotalAtLeast(&WorkerStats::completed, kKeys / 4), kPhaseBound));
  Cluster("kill-node", leader_);
  ASSERT_TRUE(run_->RunUntil(TotalAtLeast(&WorkerStats::completed, kKeys * 3 / 4), kPhaseBound));
  Cluster("start-node", leader_);
  ASSERT_TRUE(run_->Finish(kFinishBound));
  const natstest::RunOutcome outcome = natstest::CheckRun(*run_, uri_);
  EXPECT_EQ(outcome.effects, kKeys);  // no lease lapsed (120 s): no effect ran twice
  EXPECT_EQ(outcome.superseded, 0);
}

// The bucket's leader steps down (JetStream's leader step-down request) while both processes'
// requests are in flight: every key still runs once with one stored answer, and the processes'
// writes follow the new leader: counted on the servers, idem's connections on the new leader
// receive nearly all of them once it is elected (the store hears of the election by its
// advisory, or asks again after a failed write or within 10 s).
TEST_F(NatsTwoProcessFault, LeaderStepsDownMidRunEveryEffectRunsOnceWritesFollowTheNewLeader) {
  run_->Start("p1", uri_, 120s);
  run_->Start("p2", uri_, 120s);
  ASSERT_TRUE(run_->RunUntil(TotalAtLeast(&WorkerStats::completed, kKeys / 8), kPhaseBound));
  auto admin = natstest::Connect(nodes_[0] + "," + nodes_[1] + "," + nodes_[2]);
  ASSERT_TRUE(admin.ok()) << admin.status();
  const absl::Status stepped = natstest::StepDown((*admin)->connection(), "KV_" + bucket_);
  ASSERT_TRUE(stepped.ok()) << stepped;
  int elected = 0;
  auto last_asked = std::chrono::steady_clock::now() - 1s;
  ASSERT_TRUE(run_->RunUntil(
      [&](const std::vector<Worker>&) {
        if (std::chrono::steady_clock::now() - last_asked < 200ms) return false;
        last_asked = std::chrono::steady_clock::now();
        elected = natstest::StreamLeader((*admin)->js(), "KV_" + bucket_);
        return elected > 0 && elected != leader_;
      },
      kPhaseBound));
  // Two seconds for the processes to move, then one second counted.
  const auto elected_at = std::chrono::steady_clock::now();
  const auto after = [&](std::chrono::seconds wait) {
    return [=](const std::vector<Worker>&) {
      return std::chrono::steady_clock::now() - elected_at > wait;
    };
  };
  ASSERT_TRUE(run_->RunUntil(after(2s), kPhaseBound));
  const absl::StatusOr<natstest::ConnectionMessages> before =
      natstest::MessagesFrom(Fixture::kCluster, "idem key store");
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_TRUE(run_->RunUntil(after(3s), kPhaseBound));
  const absl::StatusOr<natstest::ConnectionMessages> counted =
      natstest::MessagesFrom(Fixture::kCluster, "idem key store");
  ASSERT_TRUE(counted.ok()) << counted.status();
  const std::vector<int64_t> received = natstest::Received(*before, *counted);
  int64_t total = 0;
  for (int64_t n : received) total += n;
  const int64_t at_leader = received[static_cast<size_t>(elected - 1)];
  std::printf("%lld of %lld messages from idem at the new leader\n",
              static_cast<long long>(at_leader), static_cast<long long>(total));
  EXPECT_GE(total, 50) << "too few writes counted to tell";
  EXPECT_GE(at_leader * 10, total * 9) << at_leader << " of " << total << " at the new leader";
  ASSERT_TRUE(run_->Finish(kFinishBound));
  const natstest::RunOutcome outcome = natstest::CheckRun(*run_, uri_);
  EXPECT_EQ(outcome.effects, kKeys);  // no lease lapsed (120 s): no effect ran twice
  EXPECT_EQ(outcome.superseded, 0);
}

TEST_F(NatsTwoProcessFault, WokenLeaderNeverCompletesAKeyItsWorkerLost) {
  // "near" talks only to the leader; "far" only to the other two. Leases of 6 s lapse while the
  // leader is paused, so far takes over the keys near holds; near, woken, must be refused.
  std::vector<std::string> others;
  for (int i = 1; i <= 3; ++i) {
    if (i != leader_) others.push_back(nodes_[static_cast<size_t>(i - 1)]);
  }
  auto others_admin = natstest::Connect(others[0] + "," + others[1]);
  ASSERT_TRUE(others_admin.ok()) << others_admin.status();
  const std::string bucket = "replicas=3&bucket=" + bucket_;
  // Near's effects of one key per thread, at a quarter of the run, take 4 s (a slow upstream
  // call), and far claims those keys only once near has (within 60 s), so near holds them even
  // when far's threads run ahead of near's (a loaded machine saw far take all of them first, and
  // near hold none, when far merely waited 300 ms): the leader is paused once
  // near is seen inside 4 of them, so near holds keys whose completion it will send to the paused
  // leader. Seen, not guaranteed still inside: the pause is a fixture command that can take
  // seconds on a loaded machine, and a thread seen inside may finish before it lands (with effects
  // of 1.5 s, 16 keys were lost on an idle machine, 4 with both cores busy, and a CI run failed).
  constexpr int kSlowFrom = kKeys / 4;
  run_->Start("near", natstest::StoreUriOn({nodes_[static_cast<size_t>(leader_ - 1)]}, bucket), 6s,
              kSlowFrom, 4000ms);
  run_->Start("far", natstest::StoreUriOn(others, bucket), 6s, kSlowFrom, -60000ms);
  ASSERT_TRUE(run_->RunUntil(
      [](const std::vector<Worker>& workers) { return workers[0].stats.slow >= 4; }, kPhaseBound));
  Cluster("pause-node", leader_);
  paused_ = leader_;
  const auto paused_at = std::chrono::steady_clock::now();
  // Paused past an election: the other two elect a leader, and far takes over every key near
  // holds (far's thread t and near's walk the same keys in step: far waits for each, and once the
  // 6 s leases near took before the pause have lapsed, no far thread waits any more).
  auto last_asked = paused_at - 1s;
  bool elected = false;
  ASSERT_TRUE(run_->RunUntil(
      [&](const std::vector<Worker>& workers) {
        const auto now = std::chrono::steady_clock::now();
        if (!elected && now - last_asked > 200ms) {
          last_asked = now;
          const int leader = natstest::StreamLeader((*others_admin)->js(), "KV_" + bucket_);
          elected = leader > 0 && leader != leader_;
        }
        const WorkerStats& far = workers[1].stats;
        return elected && now - paused_at > 4s && far.takeovers > 0 && far.waiting == 0;
      },
      kPhaseBound))
      << "elected: " << elected;
  Cluster("resume-node", leader_);
  paused_ = 0;
  ASSERT_TRUE(run_->Finish(kFinishBound));
  const natstest::RunOutcome outcome = natstest::CheckRun(*run_, uri_);
  // At least one key lost proves the scenario ran; how many of the 4 seen were still held when the
  // pause landed depends on the machine's load (a from-scratch CI run saw 3).
  EXPECT_GE(run_->workers()[0].stats.lost, 1) << "woken workers refused keys they lost";
  EXPECT_EQ(outcome.superseded, run_->Total(&WorkerStats::lost));
  EXPECT_EQ(outcome.effects, kKeys + outcome.superseded);
}

TEST_F(NatsTwoProcessFault, TwoOfThreeServersDownEveryWriteUnavailableThenTheRunFinishes) {
  run_->Start("p1", uri_, 120s);
  run_->Start("p2", uri_, 120s);
  ASSERT_TRUE(run_->RunUntil(TotalAtLeast(&WorkerStats::completed, kKeys / 4), kPhaseBound));
  std::vector<int> killed;
  for (int i = 1; i <= 3 && killed.size() < 2; ++i) {
    if (i != leader_) killed.push_back(i);  // the leader stays, without a quorum
  }
  for (int node : killed) Cluster("kill-node", node);
  // Once both processes have met the outage, no write is acknowledged until the servers are back
  // (a read may still find an earlier write of its own whose answer was lost: not counted here).
  const auto writes = [&] {
    return run_->Total(&WorkerStats::claimed) + run_->Total(&WorkerStats::completed) +
           run_->Total(&WorkerStats::takeovers);
  };
  const auto each_more_unavailable = [&](int64_t more) {
    std::vector<int64_t> at_least;
    for (const Worker& w : run_->workers()) at_least.push_back(w.stats.unavailable + more);
    return [at_least](const std::vector<Worker>& workers) {
      for (size_t i = 0; i < workers.size(); ++i) {
        if (workers[i].stats.unavailable < at_least[i]) return false;
      }
      return true;
    };
  };
  const auto killed_at = std::chrono::steady_clock::now();
  const auto first_window = each_more_unavailable(kThreads / 2);
  ASSERT_TRUE(run_->RunUntil(
      [&](const std::vector<Worker>& workers) {
        // A write sent before the quorum went is answered or timed out within lock_timeout (2 s).
        return first_window(workers) && std::chrono::steady_clock::now() - killed_at > 3s;
      },
      kPhaseBound));
  const int64_t writes_before = writes();
  ASSERT_TRUE(run_->RunUntil(each_more_unavailable(kThreads / 2), kPhaseBound));
  EXPECT_EQ(writes(), writes_before) << "a write succeeded without a quorum";
  for (int node : killed) Cluster("start-node", node);
  ASSERT_TRUE(run_->Finish(kFinishBound));
  const natstest::RunOutcome outcome = natstest::CheckRun(*run_, uri_);
  EXPECT_EQ(outcome.effects, kKeys);
  EXPECT_EQ(outcome.superseded, 0);
}

}  // namespace
}  // namespace idem
