// Progress of a long simulation, reported on a line-oriented stream (stderr): `idem sim backoff`
// can be asked for runs that take hours, and a silent terminal looks like a hang.
//
// A run that ends quickly prints nothing (unless always-on), so scripts reading the output see
// no noise. Past a quiet period a line goes out at most once per interval with the share done and
// an estimate of the time left; once, when the estimated total passes a bound, a warning says so
// and how to shorten the run.
//
// Thread-safety: a StudyProgress belongs to one thread.
#ifndef IDEM_SIM_STUDY_PROGRESS_H_
#define IDEM_SIM_STUDY_PROGRESS_H_

#include <cstdint>
#include <functional>
#include <string>

#include "idem/clock.h"

namespace idem::sim {

struct ProgressOptions {
  bool always = false;              // report from the start and at the end (--progress)
  Millis quiet_for{2000};           // otherwise: nothing before this much time has passed
  Millis every{2000};               // at most one progress line per this interval
  Millis warn_beyond{10 * 60'000};  // an estimated total beyond this earns one warning
  std::string what = "runs";        // the unit counted, for the message
  std::string shorten_hint;         // how to shorten the run, e.g. "lower --runs or --clients"
};

// Returns "1h02m", "3m20s", "12s" or "0s".
std::string FormatLongDuration(Millis d);

class StudyProgress final {
 public:
  // `prefix` opens every line ("idem sim backoff"); `print` receives each line, without '\n'.
  // `clock` is not owned and must outlive this object.
  StudyProgress(std::string prefix, ProgressOptions options, const Clock& clock,
                std::function<void(const std::string&)> print);
  StudyProgress(const StudyProgress&) = delete;
  StudyProgress& operator=(const StudyProgress&) = delete;

  // Records that `done` of `total` units of work are finished (weights, not necessarily runs).
  // REQUIRES: 0 <= done <= total, total > 0, done never decreasing.
  void Update(int64_t done, int64_t total);
  // Prints the closing line when any progress was shown.
  void Finish();

 private:
  void Print(const std::string& line);

  std::string prefix_;
  ProgressOptions options_;
  const Clock& clock_;
  std::function<void(const std::string&)> print_;
  int64_t start_ms_;
  int64_t last_line_ms_ = -1;  // -1: no line yet
  bool warned_ = false;
  int64_t done_ = 0;
  int64_t total_ = 0;
};

}  // namespace idem::sim

#endif  // IDEM_SIM_STUDY_PROGRESS_H_
