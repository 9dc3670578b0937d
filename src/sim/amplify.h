// The model behind `idem sim amplify`: how many calls reach a failing dependency at the bottom
// of a stack of layers when each layer retries, and what containment brings that down to.
//
// The stack: a top-level request enters layer 1; layer i calls layer i+1 and layer L calls the
// dependency, which always fails. Each layer makes up to `attempts` tries per call it receives.
// Three ways to run the stack:
//   none       every layer retries freely: attempts^layers calls reach the dependency.
//   budget     every layer retries, but each keeps its own retry budget over the whole run:
//              a retry is allowed only while its retries so far stay below
//              floor + percent% of its first tries so far (a token bucket that each first try
//              fills by percent/100 and each retry drains by one).
//   one-layer  only layer 1 (the edge) retries; the layers below try once and pass the
//              failure up marked "do not retry": attempts calls reach the dependency.
// Figures are per top-level request, averaged over `requests` requests sent one after another.
//
// Thread-safety: pure functions.
#ifndef IDEM_SIM_AMPLIFY_H_
#define IDEM_SIM_AMPLIFY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace idem::sim {

enum class Containment { kNone, kBudget, kOneLayer };

// Returns "none", "budget" or "one-layer".
const char* ContainmentName(Containment containment);

struct AmplifyConfig {
  int layers = 4;           // 1..10
  int attempts = 3;         // tries per call, first one included; 1..10
  int budget_percent = 10;  // retries allowed per 100 first tries; 0..100
  int budget_floor = 0;     // retries each layer may make regardless of traffic; 0..1000000
  int requests = 1000;      // top-level requests simulated; 1..100000
};

struct AmplifyRow {
  Containment containment = Containment::kNone;
  double bottom_calls = 0;  // calls reaching the dependency, per top-level request
  double total_calls = 0;   // calls made on every hop of the stack, per top-level request
};

// Returns the rows none, budget, one-layer in that order.
// Errors: InvalidArgument when a setting is outside the range stated beside it.
absl::StatusOr<std::vector<AmplifyRow>> SimulateAmplification(const AmplifyConfig& config);

}  // namespace idem::sim

#endif  // IDEM_SIM_AMPLIFY_H_
