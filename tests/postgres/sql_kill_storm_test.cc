// A SIGKILL storm on SQL workers: worker processes (forked, each with its own libpq session) charge
// the same keys with idem.begin / a business INSERT / idem.finish in one transaction, while the
// test kills a random worker every few milliseconds, mid-transaction or not, and starts another.
// Whatever the kills hit, every key's effect happens exactly once and every answer a worker got is
// the recorded one.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sql_functions_fixture.h"

namespace idem::pgtest {
namespace {

constexpr int kKeys = 60;
constexpr int kWorkers = 4;
constexpr int kKills = 25;

struct Worker {
  pid_t pid = -1;
  int out = -1;  // the read end of the pipe the worker writes "key answer" lines to
};

// The worker's life: every key, in an order of its own, until each has an answer; an error
// (a lock wait cut short, a lost connection) rolls back and tries that key again.
[[noreturn]] void RunWorker(const std::string& uri, int out, unsigned seed) {
  std::unique_ptr<SqlSession> session = SqlSession::Open(uri);
  if (session == nullptr) _exit(3);
  std::vector<int> keys(kKeys);
  for (int i = 0; i < kKeys; ++i) keys[i] = i;
  std::shuffle(keys.begin(), keys.end(), std::mt19937(seed));
  for (int k : keys) {
    const std::string key = "storm-" + std::to_string(k);
    for (int attempt = 0; attempt < 50; ++attempt) {
      session->Exec("ROLLBACK");
      if (!session->Exec("BEGIN").ok()) continue;
      SqlAnswer begin = session->Exec(
          "SELECT decision, convert_from(body, 'UTF8') FROM idem.begin($1, 'fp')", {key});
      std::string answer;
      if (begin.At(0, 0) == "run") {
        answer = "ch-" + key + "-" + std::to_string(getpid()) + "-" + std::to_string(attempt);
        if (!session->Exec("INSERT INTO charges (key, id) VALUES ($1, $2)", {key, answer}).ok() ||
            !session->Exec("SELECT idem.finish($1, 201, '{}', convert_to($2, 'UTF8'))",
                           {key, answer})
                 .ok()) {
          continue;
        }
      } else if (begin.At(0, 0) == "replay") {
        answer = begin.At(0, 1);
      } else {
        continue;  // an error: roll back, try again
      }
      if (!session->Exec("COMMIT").ok()) continue;
      const std::string line = key + " " + answer + "\n";
      if (write(out, line.data(), line.size()) != static_cast<ssize_t>(line.size())) _exit(4);
      break;
    }
  }
  _exit(0);
}

Worker Spawn(const std::string& uri, unsigned seed) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    RunWorker(uri, fds[1], seed);
  }
  close(fds[1]);
  return {pid, fds[0]};
}

// Everything a finished or killed worker wrote.
std::string Drain(int fd) {
  std::string all;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) all.append(buffer, static_cast<size_t>(n));
  close(fd);
  return all;
}

using SqlKillStormTest = SqlFunctionsFixture;

TEST_F(SqlKillStormTest, EveryKeysEffectHappensOnceAndEveryAnswerIsTheRecordedOne) {
  std::mt19937 random(12345);
  std::vector<Worker> running;
  std::vector<Worker> ended;
  unsigned seed = 1;
  for (int i = 0; i < kWorkers; ++i) running.push_back(Spawn(uri_, seed++));
  int killed = 0;
  for (; killed < kKills; ++killed) {
    // The fault schedule: a kill every 1-15 ms, at whatever point each worker is.
    std::this_thread::sleep_for(std::chrono::milliseconds(1 + random() % 15));
    const size_t victim = random() % running.size();
    kill(running[victim].pid, SIGKILL);
    ended.push_back(running[victim]);
    running[victim] = Spawn(uri_, seed++);
  }
  // The last workers run to the end; the killed ones are reaped.
  std::map<std::string, std::vector<std::string>> answers;
  int clean_exits = 0;
  for (std::vector<Worker>* group : {&ended, &running}) {
    for (Worker& w : *group) {
      ASSERT_GT(w.pid, 0);
      std::istringstream lines(Drain(w.out));
      int status = 0;
      waitpid(w.pid, &status, 0);
      if (group == &running) {
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker status " << status;
        ++clean_exits;
      }
      std::string key, answer;
      while (lines >> key >> answer) answers[key].push_back(answer);
    }
  }
  EXPECT_EQ(clean_exits, kWorkers);
  EXPECT_EQ(killed, kKills);

  EXPECT_EQ(Scalar("SELECT count(*) FROM charges"), std::to_string(kKeys));
  EXPECT_EQ(Scalar("SELECT count(DISTINCT key) FROM charges"), std::to_string(kKeys));
  EXPECT_EQ(Scalar("SELECT count(*) FROM idem_keys k JOIN charges c USING (key) "
                   "WHERE k.state = 2 AND convert_from(k.body, 'UTF8') = c.id"),
            std::to_string(kKeys));
  ASSERT_EQ(answers.size(), static_cast<size_t>(kKeys));  // the last workers answered every key
  for (const auto& [key, got] : answers) {
    const std::string recorded = Scalar("SELECT id FROM charges WHERE key = '" + key + "'");
    for (const std::string& a : got) EXPECT_EQ(a, recorded) << key;
  }
}

}  // namespace
}  // namespace idem::pgtest
