// Internal: the in-process sweeper of `idem serve`: deletes expired key records in small batches
// on its own thread, so a large backlog never holds the store's write lock for long.
//
// Thread-safety: Start and Stop from one controlling thread.
#ifndef IDEM_GATEWAY_SWEEPER_H_
#define IDEM_GATEWAY_SWEEPER_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "gateway/metrics.h"
#include "idem/clock.h"
#include "idem/store.h"

namespace idem::gateway {

class Sweeper final {
 public:
  // Sweeps every `interval`, `batch` records per store call, with a short pause between calls.
  // REQUIRES: store and metrics outlive the sweeper; batch >= 1.
  Sweeper(Store& store, Metrics& metrics, Millis interval, int64_t batch = 500);
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;
  ~Sweeper() { Stop(); }

  // Starts the sweeping thread; a no-op when running.
  void Start();
  // Stops it, finishing the batch in progress. Idempotent.
  void Stop();

 private:
  void Run();
  // Waits `d` or until stopped; returns false when stopped.
  bool Pause(Millis d);

  Store& store_;
  Metrics& metrics_;
  const Millis interval_;
  const int64_t batch_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace idem::gateway

#endif  // IDEM_GATEWAY_SWEEPER_H_
