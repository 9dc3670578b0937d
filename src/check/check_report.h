// How a run of `idem check` is shown: a table a person reads (a row per scenario, then a
// summary), or one JSON object whose field names are a contract (docs/idem-check.md).
//
// Thread-safety: pure functions.
#ifndef IDEM_CHECK_CHECK_REPORT_H_
#define IDEM_CHECK_CHECK_REPORT_H_

#include <string>

#include "check/check_plan.h"
#include "check/check_run.h"

namespace idem::check {

// The table: a heading line (what was checked, how effects were counted), for each scenario a
// line "NAME RESULT WHY" and an indented line of evidence (over several rounds: the first
// failing round's, else the last round's), then a summary line. Ends with a newline.
std::string FormatTable(const Plan& plan, const CheckReport& report);

// One JSON object on one line (ends with a newline): see docs/idem-check.md for its fields.
std::string FormatJson(const Plan& plan, const CheckReport& report);

}  // namespace idem::check

#endif  // IDEM_CHECK_CHECK_REPORT_H_
