#include "sim/study_progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace idem::sim {

std::string FormatLongDuration(Millis d) {
  const int64_t seconds = d.count() / 1000;
  if (seconds >= 3600) return fmt::format("{}h{:02}m", seconds / 3600, seconds % 3600 / 60);
  if (seconds >= 60) return fmt::format("{}m{:02}s", seconds / 60, seconds % 60);
  return fmt::format("{}s", seconds);
}

StudyProgress::StudyProgress(std::string prefix, ProgressOptions options, const Clock& clock,
                             std::function<void(const std::string&)> print)
    : prefix_(std::move(prefix)),
      options_(std::move(options)),
      clock_(clock),
      print_(std::move(print)),
      start_ms_(clock.NowMillis()) {}

void StudyProgress::Print(const std::string& line) {
  print_(fmt::format("{}: {}", prefix_, line));
  last_line_ms_ = clock_.NowMillis();
}

void StudyProgress::Update(int64_t done, int64_t total) {
  done_ = done;
  total_ = total;
  const int64_t now = clock_.NowMillis();
  const int64_t elapsed = now - start_ms_;
  const bool started = options_.always || elapsed >= options_.quiet_for.count();
  if (!started || done <= 0 || total <= 0) return;
  // The pace so far, applied to what is left; capped (about 31,000 years) so that converting it
  // to an integer stays defined however slow the start was.
  const double left_ms = std::min(
      static_cast<double>(elapsed) * static_cast<double>(total - done) / static_cast<double>(done),
      1e15);
  const Millis estimated_total(elapsed + static_cast<int64_t>(left_ms));
  if (!warned_ && estimated_total > options_.warn_beyond) {
    warned_ = true;
    Print(fmt::format("at this pace the whole run takes about {}{}; Ctrl-C stops it",
                      FormatLongDuration(estimated_total),
                      options_.shorten_hint.empty() ? "" : ": " + options_.shorten_hint));
  }
  if (done < total && (last_line_ms_ < 0 ? true : now - last_line_ms_ >= options_.every.count())) {
    Print(fmt::format("{}% of the {} done, about {} left", done * 100 / total, options_.what,
                      FormatLongDuration(Millis(static_cast<int64_t>(left_ms)))));
  }
}

void StudyProgress::Finish() {
  if (last_line_ms_ < 0 && !options_.always) return;
  Print(fmt::format("100% of the {} done in {}", options_.what,
                    FormatLongDuration(Millis(clock_.NowMillis() - start_ms_))));
}

}  // namespace idem::sim
