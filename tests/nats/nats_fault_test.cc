// Faults of the three-node cluster at the scale, on the private "nats_quorum" cluster: two
// worker processes (idem-nats-key-worker) of 16 threads each claim and complete the same 2,000
// keys, each effect appending a line to its process's file, while the test kills, pauses and
// restarts servers. In every case, once the workers are done (CheckRun): every key is completed
// and replays its stored answer to a new claim, the answer names exactly one effect, and every
// other effect of a key belongs to a claim that lost the key and never completed it.
#include <fmt/format.h>
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
// writes follow the new leader: counted on the servers, idem's connections on the leader receive
// nearly all of them in a window of one second that starts at most kFollowBound after the
// election (the store hears of an election by its advisory, or asks again after a failed write;
// the bound is below the 10 s after which it asks again anyway).
TEST_F(NatsTwoProcessFault, LeaderStepsDownMidRunEveryEffectRunsOnceWritesFollowTheNewLeader) {
  // Twice the keys: with kKeys, the first window after the election held most of what was left
  // (2,500-3,500 of idem's messages), so a window spoiled by a second election could leave no
  // traffic to decide by, and the run ended before a conclusive window.
  constexpr int kStepDownKeys = kKeys * 2;
  run_ = std::make_unique<WorkerRun>(::testing::TempDir() + bucket_, kThreads, kStepDownKeys);
  run_->Start("p1", uri_, 120s);
  run_->Start("p2", uri_, 120s);
  ASSERT_TRUE(run_->RunUntil(TotalAtLeast(&WorkerStats::completed, kKeys / 8), kPhaseBound));
  auto admin = natstest::Connect(nodes_[0] + "," + nodes_[1] + "," + nodes_[2]);
  ASSERT_TRUE(admin.ok()) << admin.status();
  const std::string stream = "KV_" + bucket_;
  // On a loaded machine the request's reply can be late or lost although the leader stepped
  // down: asked again only while the old leader still leads.
  absl::Status stepped = absl::UnknownError("not asked");
  ASSERT_TRUE(natstest::Eventually(
      [&] {
        const int leader = natstest::StreamLeader((*admin)->js(), stream);
        if (leader > 0 && leader != leader_) return true;
        if (leader == leader_) stepped = natstest::StepDown((*admin)->connection(), stream);
        return false;
      },
      kPhaseBound))
      << stepped;
  const auto elected_at = std::chrono::steady_clock::now();
  // Windows of one second, one after another, until one is conclusive: enough of idem's
  // messages to tell, and one leader at its start and at its end (a loaded machine can see a
  // second election). The first conclusive window starting after kFollowBound decides.
  constexpr auto kFollowBound = 6s;
  constexpr int64_t kEnoughToTell = 50;
  const auto one_second_on = [&] {
    const auto until = std::chrono::steady_clock::now() + 1s;
    return run_->RunUntil(
        [=](const std::vector<Worker>&) { return std::chrono::steady_clock::now() > until; },
        kPhaseBound);
  };
  bool followed = false;
  std::string windows;
  while (!followed) {
    const int leader_before = natstest::StreamLeader((*admin)->js(), stream);
    const absl::StatusOr<natstest::ConnectionMessages> before =
        natstest::MessagesFrom(Fixture::kCluster, "idem key store");
    ASSERT_TRUE(before.ok()) << before.status();
    const bool late = std::chrono::steady_clock::now() - elected_at > kFollowBound;
    ASSERT_TRUE(one_second_on()) << "the run ended before a conclusive window:" << windows;
    const absl::StatusOr<natstest::ConnectionMessages> counted =
        natstest::MessagesFrom(Fixture::kCluster, "idem key store");
    ASSERT_TRUE(counted.ok()) << counted.status();
    const int leader_after = natstest::StreamLeader((*admin)->js(), stream);
    const std::vector<int64_t> received = natstest::Received(*before, *counted);
    int64_t total = 0;
    for (int64_t n : received) total += n;
    const int64_t at_leader =
        leader_after > 0 ? received[static_cast<size_t>(leader_after - 1)] : 0;
    windows += fmt::format(" [leader {}->{}: {} of {} at the leader]", leader_before, leader_after,
                           at_leader, total);
    if (leader_before != leader_after || leader_after <= 0 || total < kEnoughToTell) continue;
    followed = at_leader * 10 >= total * 9;
    if (late) break;
  }
  std::printf("windows after the election:%s\n", windows.c_str());
  EXPECT_TRUE(followed) << "idem's writes did not follow the new leader within "
                        << kFollowBound.count() << " s:" << windows;
  ASSERT_TRUE(run_->Finish(kFinishBound));
  const natstest::RunOutcome outcome = natstest::CheckRun(*run_, uri_);
  EXPECT_EQ(outcome.effects, kStepDownKeys);  // no lease lapsed (120 s): no effect ran twice
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
