// Many processes, many connections, one PostgreSQL database: every key's effect happens exactly
// once and every caller gets the same answer, also when the server restarts mid-run.
//
// Each test spawns kProcesses copies of idem-pg-guard-driver (guard_driver.cc), each running
// kThreads connections that all send the same kKeys keys through idem::Guard.
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "idem/store.h"
#include "pg_test_support.h"

extern char** environ;

namespace idem {
namespace {

using Rows = std::vector<std::vector<std::string>>;

constexpr int kProcesses = 4;
constexpr int kThreads = 16;
// All 64 callers race for every key. 250 keys (16,000 guard calls) keep that race on every key,
// and the restart test's restart a quarter into the run, in a quarter of 1000 keys' time.
constexpr int kKeys = 250;

struct Child {
  pid_t pid = -1;
  int out = -1;          // read end of its stdout
  std::string pending;   // an incomplete last line
  int64_t progress = 0;  // runs it reported done
  std::map<std::string, std::string> responses;
  int64_t transient = 0;
  std::vector<std::string> errors;
  int exit_status = -1;
};

void Spawn(Child& child, const std::vector<std::string>& args) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ASSERT_EQ(posix_spawn(&child.pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  child.out = fds[0];
}

void HandleLine(Child& child, const std::string& line) {
  std::istringstream in(line);
  std::string kind;
  in >> kind;
  if (kind == "progress") {
    in >> child.progress;
  } else if (kind == "response") {
    std::string key;
    in >> key;
    std::string body;
    std::getline(in, body);
    child.responses[key] = body.empty() ? body : body.substr(1);
  } else if (kind == "transient") {
    in >> child.transient;
  } else {
    child.errors.push_back(line);
  }
}

// Runs the drivers to the end. `on_progress` is called with the total runs done so far each
// time a driver reports progress.
std::vector<Child> RunDrivers(const std::string& uri,
                              const std::function<void(int64_t)>& on_progress) {
  std::vector<Child> children(kProcesses);
  for (int p = 0; p < kProcesses; ++p) {
    Spawn(children[static_cast<size_t>(p)], {IDEM_PG_GUARD_DRIVER, uri, std::to_string(p),
                                             std::to_string(kThreads), std::to_string(kKeys), "7"});
  }
  size_t open = children.size();
  while (open > 0) {
    std::vector<pollfd> fds;
    for (const Child& c : children) fds.push_back({c.out, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0) continue;
    for (size_t i = 0; i < children.size(); ++i) {
      Child& child = children[i];
      if (child.out < 0 || (fds[i].revents & (POLLIN | POLLHUP)) == 0) continue;
      char buffer[4096];
      const ssize_t n = read(child.out, buffer, sizeof buffer);
      if (n <= 0) {
        close(child.out);
        child.out = -1;
        --open;
        continue;
      }
      child.pending.append(buffer, static_cast<size_t>(n));
      for (size_t end; (end = child.pending.find('\n')) != std::string::npos;) {
        HandleLine(child, child.pending.substr(0, end));
        child.pending.erase(0, end + 1);
        int64_t total = 0;
        for (const Child& c : children) total += c.progress;
        on_progress(total);
      }
    }
  }
  for (Child& child : children) {
    int status = 0;
    waitpid(child.pid, &status, 0);
    child.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  return children;
}

class GuardOnPostgres : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    schema_ = fresh->schema;
    uri_ = fresh->uri;
    ASSERT_TRUE(OpenStore(uri_).ok());
    Admin(
        "CREATE TABLE effects (id bigserial PRIMARY KEY, k text NOT NULL, "
        "process integer NOT NULL, thread integer NOT NULL)");
  }

  Rows Admin(std::string_view sql) {
    absl::StatusOr<Rows> rows = pgtest::AdminQuery(schema_, sql);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : Rows{};
  }

  // Every driver finished, agreed with the others on every key, and the database holds exactly
  // one effect per key, by the caller whose response everyone got.
  void ExpectExactlyOnce(const std::vector<Child>& children) {
    for (const Child& child : children) {
      EXPECT_EQ(child.exit_status, 0);
      for (const std::string& error : child.errors) ADD_FAILURE() << error;
      EXPECT_EQ(child.responses.size(), static_cast<size_t>(kKeys));
      EXPECT_EQ(child.responses, children[0].responses);
    }
    EXPECT_EQ(Admin("SELECT count(*), count(DISTINCT k) FROM effects"),
              (Rows{{std::to_string(kKeys), std::to_string(kKeys)}}));
    EXPECT_EQ(Admin("SELECT state, count(*) FROM idem_keys GROUP BY state"),
              (Rows{{"2", std::to_string(kKeys)}}));
    const Rows effects = Admin("SELECT k, process, thread FROM effects");
    for (const auto& row : effects) {
      const auto it = children[0].responses.find(row[0]);
      ASSERT_NE(it, children[0].responses.end()) << row[0];
      EXPECT_EQ(it->second, fmt::format("key={} by=p{}/t{}", row[0], row[1], row[2]));
    }
  }

  std::string schema_;
  std::string uri_;
};

TEST_F(GuardOnPostgres, ManyProcessesAndConnectionsRunEachKeyExactlyOnce) {
  std::vector<Child> children = RunDrivers(uri_, [](int64_t) {});
  ExpectExactlyOnce(children);
}

TEST_F(GuardOnPostgres, ServerRestartMidRunIsTransientAndEveryKeyStillRunsOnce) {
  // Restart once a quarter of all runs are done: the drivers are mid-flight on every connection.
  constexpr int64_t kRestartAfter = int64_t{kProcesses} * kThreads * kKeys / 4;
  bool restarted = false;
  absl::Status restart;
  std::vector<Child> children = RunDrivers(uri_, [&](int64_t done) {
    if (!restarted && done >= kRestartAfter) {
      restarted = true;
      restart = pgtest::RestartServer();
    }
  });
  ASSERT_TRUE(restarted);
  ASSERT_TRUE(restart.ok()) << restart;
  int64_t transient = 0;
  for (const Child& child : children) transient += child.transient;
  EXPECT_GT(transient, 0) << "no caller saw the restart as a transient error";
  RecordProperty("transient_errors_retried", std::to_string(transient));
  std::printf("transient errors seen and retried across the restart: %lld\n",
              static_cast<long long>(transient));
  ExpectExactlyOnce(children);
  // Nothing transient was stored: no key is left in_progress (checked above: all completed),
  // and no effect exists without its key.
  EXPECT_EQ(Admin("SELECT count(*) FROM effects e WHERE NOT EXISTS (SELECT 1 FROM idem_keys k "
                  "WHERE k.key = e.k)"),
            (Rows{{"0"}}));
}

}  // namespace
}  // namespace idem
