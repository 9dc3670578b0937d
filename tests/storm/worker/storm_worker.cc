// idem-storm-worker: a service of one's own built on libidem, for the storm (tests/storm,
// docs/testing.md). The storm starts several on its PostgreSQL store, sends them its keys as
// lines on stdin, reads their answers on stdout, and SIGKILLs and restarts them mid-run.
//
//   idem-storm-worker --store URI --mode lease|tx --name wN --upstream-port PORT
//                     --lease-ms MS --upstream-timeout-ms MS
//
// Prints "ready" once the store is open; then each line "ID\tOP\tKEY\tMODE\tXRID\tBODY" (OP:
// run, replay, effects) is handled on a thread of its own, so that several keys, and several
// requests of one key, are at the guard at once, and answered "ID\tSTATUS\tTYPE\tREPLAYED\tBODY"
// (actions.h). At the end of its input it waits for the requests under way and exits 0.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "actions.h"
#include "idem/guard.h"
#include "idem/lease_guard.h"
#include "idem/store.h"

namespace {

using idem::storm::Reply;
using idem::storm::Request;
using idem::storm::WorkerConfig;

struct Args {
  std::string store;
  std::string mode;
  WorkerConfig config;
};

bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const std::string value = argv[i + 1];
    int ms = 0;
    if (flag == "--store") {
      args->store = value;
    } else if (flag == "--mode" && (value == "lease" || value == "tx")) {
      args->mode = value;
    } else if (flag == "--name") {
      args->config.name = value;
    } else if (flag == "--upstream-port" && absl::SimpleAtoi(value, &args->config.upstream_port)) {
    } else if (flag == "--lease-ms" && absl::SimpleAtoi(value, &ms) && ms > 0) {
      args->config.lease = std::chrono::milliseconds(ms);
    } else if (flag == "--upstream-timeout-ms" && absl::SimpleAtoi(value, &ms) && ms > 0) {
      args->config.upstream_timeout = std::chrono::milliseconds(ms);
    } else {
      std::fprintf(stderr, "idem-storm-worker: bad argument %s %s\n", flag.c_str(), value.c_str());
      return false;
    }
  }
  return argc % 2 == 1 && !args->store.empty() && !args->mode.empty() && !args->config.name.empty();
}

// Answer lines are written whole, one at a time, by the request threads.
class Output {
 public:
  void Write(const std::string& id, const Reply& reply) {
    // An answer line must stay one line: error texts may hold tabs or newlines.
    const std::string body =
        absl::StrReplaceAll(reply.body, {{"\t", " "}, {"\n", " "}, {"\r", " "}});
    const std::string line = absl::StrCat(id, "\t", reply.status, "\t", reply.type, "\t",
                                          reply.replayed ? 1 : 0, "\t", body, "\n");
    std::lock_guard lock(mu_);
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
  }

 private:
  std::mutex mu_;
};

// Counts the request threads under way, so that the end of input waits for them.
class Running {
 public:
  void Add() {
    std::lock_guard lock(mu_);
    ++count_;
  }
  void Done() {
    std::lock_guard lock(mu_);
    if (--count_ == 0) idle_.notify_all();
  }
  void WaitIdle() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return count_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable idle_;
  int count_ = 0;
};

// The store may be down when the nemesis restarts a worker (PostgreSQL stopped or crashed): the
// worker waits for it for a minute, as a service's supervisor would keep restarting it.
absl::StatusOr<std::unique_ptr<idem::Store>> OpenStoreWhenUp(const std::string& uri) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (true) {
    // Lock waits as short as the storm's gateways' (--lock-timeout 1s), and connections for
    // every request thread a storm gives one worker.
    auto store =
        idem::OpenStore(uri, {.lock_timeout = std::chrono::seconds(1), .max_connections = 12});
    if (store.ok() || std::chrono::steady_clock::now() > give_up) return store;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!ParseArgs(argc, argv, &args)) {
    std::fprintf(stderr,
                 "usage: idem-storm-worker --store URI --mode lease|tx --name NAME "
                 "[--upstream-port PORT] [--lease-ms MS] [--upstream-timeout-ms MS]\n");
    return 2;
  }
  auto store = OpenStoreWhenUp(args.store);
  if (!store.ok()) {
    std::fprintf(stderr, "idem-storm-worker: cannot open the store: %s\n",
                 store.status().ToString().c_str());
    return 1;
  }
  if (args.mode == "tx") {
    const absl::Status created = idem::storm::CreateEffectsTable(**store);
    if (!created.ok()) {
      std::fprintf(stderr, "idem-storm-worker: cannot create storm_tx_effects: %s\n",
                   created.ToString().c_str());
      return 1;
    }
  }
  const std::string owner = absl::StrCat("storm-", args.config.name);
  idem::LeaseGuard lease_guard(**store, {.lease = args.config.lease, .owner = owner});
  // Retries of a doomed transaction: a terminated backend or a lost connection is retried by the
  // guard itself, as a service would configure it.
  idem::Guard guard(**store, {.owner = owner, .transient_retries = 2});
  Output out;
  Running running;
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('\t', 5));
    f.resize(6);
    Request request{.id = f[0], .op = f[1], .key = f[2], .mode = f[3], .xrid = f[4], .body = f[5]};
    running.Add();
    // One detached thread a request: the worker's end of input waits for them (Running).
    std::thread([&, req = std::move(request)] {
      Reply reply;
      const bool lease = args.mode == "lease";
      if (req.op == "run") {
        reply = lease ? idem::storm::RunLeased(lease_guard, args.config, req)
                      : idem::storm::RunInTransaction(guard, args.config, req);
      } else if (req.op == "replay") {
        reply = lease ? idem::storm::ReplayLeased(lease_guard, req)
                      : idem::storm::ReplayInTransaction(guard, req);
      } else if (req.op == "effects") {
        reply = idem::storm::ListEffects(**store);
      } else {
        reply = Reply{.status = 400, .type = "bad-request", .body = "unknown op " + req.op};
      }
      out.Write(req.id, reply);
      running.Done();
    }).detach();
  }
  running.WaitIdle();
  return 0;
}
