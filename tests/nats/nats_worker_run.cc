#include "nats_worker_run.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>
#include <thread>
#include <utility>

#include "idem/store.h"
#include "nats_test_support.h"

extern char** environ;

namespace idem::natstest {
namespace {

constexpr char kFingerprint[] = "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff";

void HandleLine(Worker& worker, const std::string& line) {
  std::istringstream in(line);
  std::string kind;
  in >> kind;
  WorkerStats& s = worker.stats;
  if (kind == "stat") {
    in >> s.claimed >> s.completed >> s.takeovers >> s.lost >> s.unavailable >> s.finished >>
        s.resumed >> s.confirmed >> s.slow >> s.waiting;
  } else {
    worker.errors.push_back(worker.name + ": " + line);
  }
}

struct Effect {
  std::string owner;
  int64_t fence = 0;
};

// Every effect line of the run's files, by key.
std::map<std::string, std::vector<Effect>> ReadEffects(const WorkerRun& run, int64_t& count) {
  std::map<std::string, std::vector<Effect>> effects;
  for (const Worker& worker : run.workers()) {
    std::ifstream in(worker.effects_path);
    std::string key;
    Effect effect;
    while (in >> key >> effect.owner >> effect.fence) {
      effects[key].push_back(effect);
      ++count;
    }
  }
  return effects;
}

}  // namespace

WorkerRun::~WorkerRun() {
  for (Worker& worker : workers_) {
    if (worker.exit_status >= 0) continue;
    kill(worker.pid, SIGKILL);
    Reap(worker, true);
  }
}

void WorkerRun::Start(const std::string& name, const std::string& uri,
                      std::chrono::milliseconds lease, int slow_from,
                      std::chrono::milliseconds slow_effect) {
  mkdir(dir_.c_str(), 0755);
  Worker worker;
  worker.name = name;
  worker.effects_path = fmt::format("{}/{}.effects", dir_, name);
  unlink(worker.effects_path.c_str());
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  const std::vector<std::string> args = {IDEM_NATS_KEY_WORKER,
                                         uri,
                                         name,
                                         std::to_string(threads_),
                                         std::to_string(keys_),
                                         std::to_string(lease.count()),
                                         worker.effects_path,
                                         std::to_string(slow_effect.count()),
                                         std::to_string(slow_from)};
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const int spawned = posix_spawn(&worker.pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) close(fds[0]);
  ASSERT_EQ(spawned, 0) << IDEM_NATS_KEY_WORKER;
  worker.out = fds[0];
  workers_.push_back(std::move(worker));
}

void WorkerRun::Read(Worker& worker) {
  char buffer[8192];
  const ssize_t n = read(worker.out, buffer, sizeof buffer);
  if (n <= 0) {
    close(worker.out);
    worker.out = -1;
    Reap(worker, true);
    return;
  }
  worker.pending.append(buffer, static_cast<size_t>(n));
  for (size_t end; (end = worker.pending.find('\n')) != std::string::npos;) {
    HandleLine(worker, worker.pending.substr(0, end));
    worker.pending.erase(0, end + 1);
  }
}

void WorkerRun::Reap(Worker& worker, bool wait) {
  int status = 0;
  if (waitpid(worker.pid, &status, wait ? 0 : WNOHANG) != worker.pid) return;
  worker.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool WorkerRun::RunUntil(const std::function<bool(const std::vector<Worker>&)>& done,
                         std::chrono::seconds bound) {
  const auto deadline = std::chrono::steady_clock::now() + bound;
  while (!done(workers_)) {
    std::vector<pollfd> fds;
    std::vector<Worker*> open;
    for (Worker& w : workers_) {
      if (w.out < 0) continue;
      fds.push_back({w.out, POLLIN, 0});
      open.push_back(&w);
    }
    if (open.empty() || std::chrono::steady_clock::now() > deadline) return false;
    if (poll(fds.data(), fds.size(), 100) <= 0) continue;
    for (size_t i = 0; i < fds.size(); ++i) {
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) != 0) Read(*open[i]);
    }
  }
  return true;
}

bool WorkerRun::Finish(std::chrono::seconds bound) {
  RunUntil([](const std::vector<Worker>&) { return false; }, bound);
  bool all = true;
  for (Worker& worker : workers_) {
    if (worker.exit_status < 0) Reap(worker, false);
    all = all && worker.exit_status >= 0;
  }
  return all;
}

int64_t WorkerRun::Total(int64_t WorkerStats::*field) const {
  int64_t total = 0;
  for (const Worker& worker : workers_) total += worker.stats.*field;
  return total;
}

RunOutcome CheckRun(const WorkerRun& run, const std::string& uri) {
  RunOutcome outcome;
  for (const Worker& worker : run.workers()) {
    EXPECT_EQ(worker.exit_status, 0) << worker.name;
    for (const std::string& error : worker.errors) ADD_FAILURE() << error;
  }
  const auto effects = ReadEffects(run, outcome.effects);
  StoreOptions options;
  options.lock_timeout = std::chrono::seconds(5);
  // The cluster may still be settling after the fault: wait for it to serve.
  absl::StatusOr<std::unique_ptr<Store>> store = absl::UnknownError("not opened");
  Eventually(
      [&] {
        store = OpenStore(uri, options);
        return store.ok();
      },
      std::chrono::seconds(60));
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return outcome;
  for (int k = 0; k < run.keys(); ++k) {
    const Scope scope{"t", fmt::format("key-{:04d}", k)};
    // A new arrival of the same request replays the stored answer (the store may still be
    // settling after a restart: Unavailable is retried for a while).
    absl::StatusOr<ClaimResult> replay = absl::UnavailableError("not tried");
    for (int attempt = 0; attempt < 100 && absl::IsUnavailable(replay.status()); ++attempt) {
      if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      replay =
          (*store)->Claim(ClaimRequest{scope, kFingerprint, "checker", std::chrono::minutes(1)});
    }
    EXPECT_TRUE(replay.ok()) << scope.key << ": " << replay.status();
    if (!replay.ok()) continue;
    const KeyRecord& record = replay->record;
    EXPECT_FALSE(replay->claimed) << scope.key << " was absent";
    EXPECT_EQ(record.state, KeyState::kCompleted) << scope.key;
    EXPECT_EQ(record.response.body,
              fmt::format("key={} by={} fence={}", scope.key, record.owner, record.fence));
    int matching = 0;
    const auto it = effects.find(scope.key);
    for (const Effect& e : it == effects.end() ? std::vector<Effect>{} : it->second) {
      if (e.owner == record.owner && e.fence == record.fence) {
        ++matching;
      } else {
        EXPECT_LT(e.fence, record.fence) << scope.key << ": an effect by " << e.owner;
        ++outcome.superseded;
      }
    }
    EXPECT_EQ(matching, 1) << scope.key << ": effects of its stored outcome";
  }
  return outcome;
}

}  // namespace idem::natstest
