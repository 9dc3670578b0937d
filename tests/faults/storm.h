// A storm of duplicate requests for the store fault tests (tests/faults): pairs of clients work
// through fresh keys, both clients of a pair sending each key at the same moment, one to each of
// two gateways; each client re-sends on 409, 5xx or a dropped connection until it gets its final
// answer or its bound passes. The ledger keeps what each client got for each key; CheckStorm sets
// it beside what the upstream (examples/charges) executed and what the store recorded.
#ifndef IDEM_TESTS_FAULTS_STORM_H_
#define IDEM_TESTS_FAULTS_STORM_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "e2e_support.h"

namespace idem::faults {

struct StormOptions {
  std::string key_prefix = "storm";
  int keys = 200;
  int pairs = 8;
  // A pair's first client sends to ports[0], its second to ports[1].
  std::array<int, 2> ports{};
  // A client gives a key up this long after it first sent it (and the key counts as unanswered).
  std::chrono::milliseconds key_bound{40000};
  // Sent as X-Charges-Delay-Ms: the upstream takes this long, so that at any moment most pairs have
  // a call in flight (claimed, not yet recorded), whose outcome meets the store's fault.
  int upstream_delay_ms = 200;
};

// What one client got for one key.
struct ClientResult {
  int status = 0;         // the final answer's status; the last one seen when the bound passed
  bool final = false;     // false: still retryable (409, 5xx, no answer) when the bound passed
  std::string charge_id;  // the "id" of a 201's body ("ch_N")
  int attempts = 0;
};

struct KeyResult {
  std::string key;
  std::array<ClientResult, 2> clients;
};

class Storm {
 public:
  explicit Storm(StormOptions options);
  Storm(const Storm&) = delete;
  Storm& operator=(const Storm&) = delete;
  ~Storm();  // stops the clients (each gives its key up) and joins them

  void Start();
  // 201s received so far, by all clients.
  int64_t Answers() const { return answers_.load(); }
  // Polls until at least `n` answers were counted or `bound` passes.
  bool WaitForAnswers(int64_t n, std::chrono::milliseconds bound) const;
  // Waits until every client is done with every key, or `bound` passes.
  bool Finish(std::chrono::milliseconds bound);

  std::string Key(int i) const;
  std::string Body(int i) const;
  const StormOptions& options() const { return options_; }
  // Valid once Finish returned true.
  const std::vector<KeyResult>& results() const { return results_; }
  // How many answers of each status the clients got, retried ones included (0: no answer).
  std::map<int, int64_t> StatusCounts() const;
  std::string StatusSummary() const;

 private:
  void RunPair(int pair, int side);
  ClientResult RunClient(int key, int side);

  StormOptions options_;
  std::vector<KeyResult> results_;
  std::atomic<int64_t> answers_{0};
  std::atomic<int> next_key_{0};
  std::atomic<int> clients_done_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::map<int, int64_t> statuses_;
  std::vector<std::thread> threads_;
  struct Pair;
  std::vector<std::unique_ptr<Pair>> pair_state_;
};

// What the upstream executed: each POST per key, and the charges it created per key in order.
struct UpstreamLedger {
  std::map<std::string, int> calls;
  std::map<std::string, std::vector<std::string>> charges;  // "ch_N", oldest first
};
// Reads examples/charges' GET /stats body ("keys" and "charge_keys").
UpstreamLedger ParseStats(const std::string& stats);

// The "id" field of a JSON object body, "" when it has none.
std::string ChargeId(const std::string& body);

// Per-key counts of what went wrong; every field is 0 when the rule held.
struct Verdict {
  int keys = 0;
  int ran_twice = 0;            // the upstream executed the key more than once
  int two_answers = 0;          // the two clients got different final answers
  int answer_not_recorded = 0;  // a client's final answer is not the key's recorded answer
  int recorded_not_last = 0;    // the recorded answer is not the upstream's last execution
  int unrecorded = 0;           // no recorded answer to replay (409, 503, ... instead)
  int unanswered = 0;           // a client got no final answer (or not a 201) within its bound
  std::vector<std::string> examples;  // a line per bad key, the first few
  std::string Summary() const;
};

// `replay(i)` sends key i once more to a gateway that answers from the store (no replay cache)
// and returns its answer.
Verdict CheckStorm(const Storm& storm, const UpstreamLedger& upstream,
                   const std::function<e2e::Response(int)>& replay);

}  // namespace idem::faults

#endif  // IDEM_TESTS_FAULTS_STORM_H_
