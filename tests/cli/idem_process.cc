#include "idem_process.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace idem::testing {
namespace {

// Single-quotes an argument for /bin/sh.
std::string Quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

CallRun Idem(const std::vector<std::string>& args, const IdemIo& io) {
  char err_path[] = "/tmp/idem_cli_test_XXXXXX";
  const int fd = mkstemp(err_path);
  EXPECT_GE(fd, 0);
  close(fd);
  std::string cmd = Quote(IDEM_BINARY);
  for (const std::string& a : args) cmd += " " + Quote(a);
  cmd += " 2>" + Quote(err_path) + " <" + Quote(io.stdin_path);
  if (!io.stdout_path.empty()) cmd += " >" + Quote(io.stdout_path);
  CallRun run;
  const auto start = std::chrono::steady_clock::now();
  FILE* pipe = popen(cmd.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  char buf[4096];
  size_t n = 0;
  while (pipe != nullptr && (n = fread(buf, 1, sizeof buf, pipe)) > 0) run.out.append(buf, n);
  const int status = pipe != nullptr ? pclose(pipe) : -1;
  run.took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  run.err = ss.str();
  std::remove(err_path);
  return run;
}

}  // namespace idem::testing
