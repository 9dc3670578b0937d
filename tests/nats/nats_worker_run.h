// Runs idem-nats-key-worker processes (nats_key_worker.cc) against a NATS store, follows what they
// report, and checks the run's outcome: for the two-process fault tests (nats_fault_test.cc).
//
// Thread-safety: a WorkerRun is used by one thread.
#ifndef IDEM_TESTS_NATS_NATS_WORKER_RUN_H_
#define IDEM_TESTS_NATS_NATS_WORKER_RUN_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace idem::natstest {

// A worker's totals, from its last "stat" line (nats_key_worker.cc says what each counts).
struct WorkerStats {
  int64_t claimed = 0, completed = 0, takeovers = 0, lost = 0, unavailable = 0, finished = 0,
          resumed = 0, confirmed = 0, slow = 0, waiting = 0;
};

struct Worker {
  std::string name;
  std::string effects_path;
  pid_t pid = -1;
  int out = -1;         // read end of its stdout; -1 once it closed
  std::string pending;  // an incomplete last line
  WorkerStats stats;
  std::vector<std::string> errors;
  int exit_status = -1;  // 128+signal when killed
};

class WorkerRun {
 public:
  // Effects files go into `dir` (created). Each worker runs THREADS threads over KEYS keys.
  WorkerRun(std::string dir, int threads, int keys)
      : dir_(std::move(dir)), threads_(threads), keys_(keys) {}
  WorkerRun(const WorkerRun&) = delete;
  WorkerRun& operator=(const WorkerRun&) = delete;
  ~WorkerRun();  // kills the workers still running

  // Starts a worker named `name` on the store `uri` with leases of `lease`; the effects of keys
  // slow_from .. slow_from+THREADS-1 take `slow_effect` (-1: none; a negative slow_effect
  // instead holds back their first claim until another's record is found, for at most
  // -slow_effect, see nats_key_worker.cc). Failures to start are reported as
  // test failures.
  void Start(const std::string& name, const std::string& uri, std::chrono::milliseconds lease,
             int slow_from = -1,
             std::chrono::milliseconds slow_effect = std::chrono::milliseconds(0));

  // Follows the workers' reports until `done(workers)` returns true (true), or until `bound`
  // passes or every worker has exited (false).
  bool RunUntil(const std::function<bool(const std::vector<Worker>&)>& done,
                std::chrono::seconds bound);

  // Waits for every worker to exit, up to `bound`; false when one is still running then.
  bool Finish(std::chrono::seconds bound);

  const std::vector<Worker>& workers() const { return workers_; }
  int keys() const { return keys_; }

  // Sum of `field` over the workers.
  int64_t Total(int64_t WorkerStats::*field) const;

 private:
  void Read(Worker& worker);
  void Reap(Worker& worker, bool wait);

  std::string dir_;
  int threads_;
  int keys_;
  std::vector<Worker> workers_;
};

// What the effects files and the store say after a run.
struct RunOutcome {
  int64_t effects = 0;  // effect lines in all files
  int64_t superseded =
      0;  // effects of a claim that lost its key (a lower fence than the outcome's)
};

// Checks, with gtest assertions, that every worker exited 0 without errors; that every key of
// the run on `uri` is completed and replays its stored answer to a new claim; that the answer names
// exactly one effect (its owner and fence), and that every other effect of the key had a lower
// fence (a claim that lost its key, whose writer never completed it).
RunOutcome CheckRun(const WorkerRun& run, const std::string& uri);

}  // namespace idem::natstest

#endif  // IDEM_TESTS_NATS_NATS_WORKER_RUN_H_
