// Many threads in several processes send the same keys at once: each key's effect happens once
// and every caller of a key gets the identical response.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "idem/store.h"

extern char** environ;

namespace idem {
namespace {

constexpr int kProcesses = 2;
constexpr int kThreadsPerProcess = 8;
constexpr int kKeys = 1000;

pid_t Spawn(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  return pid;
}

class GuardConcurrency : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "idem-stress-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    uri_ = "sqlite:" + (dir_ / "keys.db").string();
    auto store = OpenStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    auto tx = (*store)->Begin();
    ASSERT_TRUE(tx.ok());
    ASSERT_TRUE(
        (*tx)->Execute("CREATE TABLE effects(key TEXT NOT NULL, writer TEXT NOT NULL)").ok());
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
  std::string uri_;
};

TEST_F(GuardConcurrency, EightThreadsInEachOfTwoProcessesGetOneEffectPerKey) {
  std::vector<pid_t> pids;
  for (int p = 0; p < kProcesses; ++p) {
    pids.push_back(Spawn({IDEM_STRESS_WORKER, uri_, std::to_string(kThreadsPerProcess),
                          std::to_string(kKeys), (dir_ / ("out-" + std::to_string(p))).string()}));
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker status " << status;
  }

  std::map<std::string, std::set<std::string>> answers;  // key → distinct bodies received
  int lines = 0;
  for (int p = 0; p < kProcesses; ++p) {
    std::ifstream in(dir_ / ("out-" + std::to_string(p)));
    for (std::string line; std::getline(in, line); ++lines) {
      ASSERT_NE(line.rfind("ERROR", 0), 0u) << line;
      const size_t tab = line.find('\t');
      answers[line.substr(0, tab)].insert(line.substr(tab + 1));
    }
  }
  EXPECT_EQ(lines, kProcesses * kThreadsPerProcess * kKeys);
  ASSERT_EQ(answers.size(), static_cast<size_t>(kKeys));
  for (const auto& [key, bodies] : answers) EXPECT_EQ(bodies.size(), 1u) << key;

  auto store = OpenStore(uri_);
  ASSERT_TRUE(store.ok());
  auto tx = (*store)->Begin();
  ASSERT_TRUE(tx.ok());
  auto effects = (*tx)->Query("SELECT key, writer FROM effects");
  ASSERT_TRUE(effects.ok()) << effects.status();
  ASSERT_EQ(effects->size(), static_cast<size_t>(kKeys));
  for (const SqlRow& row : *effects) {
    const auto& key = std::get<std::string>(row[0]);
    const auto& writer = std::get<std::string>(row[1]);
    // The one effect of each key is the one whose response every caller got.
    EXPECT_EQ(*answers[key].begin(), key + " done by " + writer);
  }
}

}  // namespace
}  // namespace idem
