#include "ledger_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <tuple>

#ifndef IDEM_LEDGER_BIN
#error "IDEM_LEDGER_BIN must name the idem-ledger binary"
#endif

extern char** environ;

namespace idem::ledger_test {
namespace {

// A small stdout pipe keeps a child that is being watched close behind its last progress line:
// once the pipe is full its next write blocks until the test reads.
constexpr int kStdoutPipeBytes = 4096;

[[noreturn]] void Die(const char* what) {
  std::perror(what);
  std::abort();
}

// The test's environment with `extra` (NAME=VALUE) added, replacing entries of the same name.
std::vector<std::string> ChildEnvironment(const std::vector<std::string>& extra) {
  std::vector<std::string> env = extra;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    const std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& added : extra) replaced = replaced || added.starts_with(name);
    if (!replaced) env.push_back(entry);
  }
  return env;
}

std::vector<char*> Pointers(std::vector<std::string>& strings) {
  std::vector<char*> pointers;
  for (std::string& s : strings) pointers.push_back(s.data());
  pointers.push_back(nullptr);
  return pointers;
}

}  // namespace

LedgerProcess::LedgerProcess(const std::vector<std::string>& args, const SpawnOptions& options) {
  std::array<int, 2> out{};
  std::array<int, 2> err{};
  if (pipe2(out.data(), O_CLOEXEC) != 0 || pipe2(err.data(), O_CLOEXEC) != 0) Die("pipe2");
  (void)fcntl(out[1], F_SETPIPE_SZ, kStdoutPipeBytes);  // best effort; the default also works
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, options.stdin_path.c_str(), O_RDONLY, 0);
  if (options.stdout_path.empty()) {
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  } else {
    posix_spawn_file_actions_addopen(&actions, 1, options.stdout_path.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
  }
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  std::vector<std::string> argv_strings = {IDEM_LEDGER_BIN};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv = Pointers(argv_strings);
  std::vector<std::string> env_strings = ChildEnvironment(options.env);
  std::vector<char*> envp = Pointers(env_strings);
  const int rc = posix_spawn(&pid_, IDEM_LEDGER_BIN, &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  close(err[1]);
  out_fd_ = out[0];
  err_fd_ = err[0];
  if (rc != 0) {
    errno = rc;
    Die("posix_spawn " IDEM_LEDGER_BIN);
  }
}

LedgerProcess::~LedgerProcess() {
  if (pid_ > 0) Kill();
  if (out_fd_ >= 0) close(out_fd_);
  if (err_fd_ >= 0) close(err_fd_);
}

// Reads whatever either pipe has, waiting for at least one. Returns false once stdout is closed.
bool LedgerProcess::FillBuffer() {
  if (out_fd_ < 0 && err_fd_ < 0) return false;
  std::array<pollfd, 2> fds = {pollfd{out_fd_, POLLIN, 0}, pollfd{err_fd_, POLLIN, 0}};
  if (poll(fds.data(), fds.size(), -1) < 0) {
    if (errno == EINTR) return true;
    Die("poll");
  }
  for (auto [index, fd, sink] :
       {std::tuple{0, &out_fd_, &buffer_}, std::tuple{1, &err_fd_, &err_}}) {
    if (*fd < 0 || fds[index].revents == 0) continue;
    std::array<char, 4096> chunk;
    const ssize_t n = read(*fd, chunk.data(), chunk.size());
    if (n > 0) {
      sink->append(chunk.data(), static_cast<size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      close(*fd);
      *fd = -1;
    }
  }
  return out_fd_ >= 0 || !buffer_.empty();
}

std::optional<std::string> LedgerProcess::ReadLine() {
  for (;;) {
    if (size_t end = buffer_.find('\n'); end != std::string::npos) {
      std::string line = buffer_.substr(0, end);
      out_ += buffer_.substr(0, end + 1);
      buffer_.erase(0, end + 1);
      return line;
    }
    if (out_fd_ < 0) {
      if (buffer_.empty()) return std::nullopt;
      std::string rest = std::move(buffer_);
      buffer_.clear();
      out_ += rest;
      return rest;
    }
    FillBuffer();
  }
}

Finished LedgerProcess::Kill() {
  if (pid_ > 0) kill(pid_, SIGKILL);
  return Wait();
}

Finished LedgerProcess::Wait() {
  while (out_fd_ >= 0 || err_fd_ >= 0) FillBuffer();
  out_ += buffer_;
  buffer_.clear();
  return Reap();
}

Finished LedgerProcess::Reap() {
  Finished finished;
  int status = 0;
  if (pid_ > 0) {
    while (waitpid(pid_, &status, 0) < 0) {
      if (errno != EINTR) Die("waitpid");
    }
    pid_ = -1;
    if (WIFEXITED(status)) finished.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) finished.signal = WTERMSIG(status);
  }
  finished.out = out_;
  finished.err = err_;
  return finished;
}

Finished RunLedger(const std::vector<std::string>& args, const SpawnOptions& options) {
  LedgerProcess process(args, options);
  return process.Wait();
}

}  // namespace idem::ledger_test
