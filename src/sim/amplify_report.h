// Text renderings of the retry-amplification model (sim/amplify.h): a table for people and a
// JSON array for programs.
//
// Thread-safety: pure functions.
#ifndef IDEM_SIM_AMPLIFY_REPORT_H_
#define IDEM_SIM_AMPLIFY_REPORT_H_

#include <string>
#include <vector>

#include "sim/amplify.h"

namespace idem::sim {

// Returns a heading naming the stack, then one line per row with the calls reaching the
// dependency and the calls on all hops, per top-level request. Whole numbers print without
// decimals ("81"), others with two ("1.46").
std::string FormatAmplifyTable(const std::vector<AmplifyRow>& rows, const AmplifyConfig& config);

// Returns a JSON array of {"containment", "layers", "attempts", "bottom_calls", "total_calls"}
// objects, one per row, ending in a newline.
std::string FormatAmplifyJson(const std::vector<AmplifyRow>& rows, const AmplifyConfig& config);

}  // namespace idem::sim

#endif  // IDEM_SIM_AMPLIFY_REPORT_H_
