// Text renderings of a backoff study (sim/backoff_study.h): a table for people, CSV for
// spreadsheets and a JSON array for programs.
//
// Thread-safety: pure functions.
#ifndef IDEM_SIM_BACKOFF_REPORT_H_
#define IDEM_SIM_BACKOFF_REPORT_H_

#include <string>
#include <vector>

#include "sim/backoff_study.h"

namespace idem::sim {

// Returns two grids (mean writes, then mean time in ms), one line per client count and one
// column per strategy; `runs` is quoted in the headings.
std::string FormatStudyTable(const std::vector<StudyRow>& rows, int runs);

// Returns "strategy,clients,writes,time_ms" then one line per row.
std::string FormatStudyCsv(const std::vector<StudyRow>& rows);

// Returns a JSON array of {"strategy", "clients", "writes", "time_ms"} objects, one per row,
// ending in a newline. (Contract: outside checks read these four names.)
std::string FormatStudyJson(const std::vector<StudyRow>& rows);

}  // namespace idem::sim

#endif  // IDEM_SIM_BACKOFF_REPORT_H_
