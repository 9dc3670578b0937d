// What the storm's library worker does for one request line (tests/storm/workers.py drives it):
// libidem's two guards on the storm's PostgreSQL store, as a service of one's own would use them.
//  - lease: LeaseGuard claims the key with a lease; the effect is a POST to the storm's counting
//    upstream carrying the claim's fence (Idempotency-Fence), which records every execution in
//    the history as it does the gateways' forwards; the answer is recorded with FinishRetrying.
//  - tx: Guard::Run; the effect is a row of storm_tx_effects written in the same PostgreSQL
//    transaction as the key's stored answer, so the table alone says how often the key ran.
// Each action returns a Reply shaped as a gateway's answer (status, problem type), so that the
// storm's checker judges both kinds of actor by the same rules.
#ifndef IDEM_TESTS_STORM_WORKER_ACTIONS_H_
#define IDEM_TESTS_STORM_WORKER_ACTIONS_H_

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "idem/guard.h"
#include "idem/lease_guard.h"
#include "idem/store.h"

namespace idem::storm {

struct WorkerConfig {
  std::string name;       // "w1": names the worker in the upstream's path and effect rows
  int upstream_port = 0;  // the storm's counting upstream on loopback
  std::chrono::milliseconds lease{4000};
  std::chrono::milliseconds upstream_timeout{2000};
};

// One request line: "ID<TAB>OP<TAB>KEY<TAB>MODE<TAB>X-REQUEST-ID<TAB>BODY".
struct Request {
  std::string id;
  std::string op;    // run, replay, effects
  std::string key;   // the storm's logical key, also the idempotency key (tenant "storm")
  std::string mode;  // X-Storm-Mode: ok, slow:MS, late (lease), fail, drop (lease)
  std::string xrid;
  std::string body;  // the request's JSON; its SHA-256 is the fingerprint
};

// One answer line: "ID<TAB>STATUS<TAB>TYPE<TAB>REPLAYED<TAB>BODY"; TYPE "-" for none.
struct Reply {
  int status = 0;
  std::string type = "-";
  bool replayed = false;
  std::string body;
};

// The answer a gateway would give for a guard's error: 422 key-reused, 409 key-in-flight, 503
// store-unavailable; anything else is 500 internal, which the checker counts as a violation.
Reply FromStatus(const absl::Status& status);

// Runs the request's effect at most once through the lease guard (see above).
Reply RunLeased(LeaseGuard& guard, const WorkerConfig& config, const Request& request);
// Runs the request's effect at most once in the key's transaction (see above).
Reply RunInTransaction(Guard& guard, const WorkerConfig& config, const Request& request);
// The key's stored answer, replayed, without running anything: 503 {"storm":"not recorded"}
// when nothing is stored (a lapsed lease taken over for the question is released at once).
Reply ReplayLeased(LeaseGuard& guard, const Request& request);
Reply ReplayInTransaction(Guard& guard, const Request& request);

// Creates storm_tx_effects, the in-transaction worker's effects, unless it exists.
absl::Status CreateEffectsTable(Store& store);
// Every row of storm_tx_effects, oldest first, as "ID,KEY,WORKER,REQUEST" joined by ';'.
Reply ListEffects(Store& store);

}  // namespace idem::storm

#endif  // IDEM_TESTS_STORM_WORKER_ACTIONS_H_
