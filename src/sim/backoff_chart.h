// An SVG picture of a backoff study (sim/backoff_study.h): two panels side by side, work
// (writes per run) and completion time against client count, one line per strategy, with
// axes, ticks, grid and a legend. Written as plain SVG text, so any browser shows it.
//
// Thread-safety: pure functions.
#ifndef IDEM_SIM_BACKOFF_CHART_H_
#define IDEM_SIM_BACKOFF_CHART_H_

#include <string>
#include <vector>

#include "sim/backoff_study.h"

namespace idem::sim {

// Returns an axis's tick values: 0, step, 2*step, ... up to the first tick >= max, with step
// 1, 2 or 5 times a power of ten, chosen for about five intervals. Max <= 0 gives {0, 1}.
std::vector<double> NiceTicks(double max);

// Returns a log axis's tick values: 1, 2 and 5 times powers of ten, from the largest such value
// not above `min` to the first at or above `max`; at least two. Min <= 0 counts as 1.
std::vector<double> LogTicks(double min, double max);

// Returns a complete SVG document (starting "<svg") of the study's rows; `runs` is quoted in
// the title.
std::string RenderStudySvg(const std::vector<StudyRow>& rows, int runs);

}  // namespace idem::sim

#endif  // IDEM_SIM_BACKOFF_CHART_H_
