#include "sim/backoff_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace idem::sim {
namespace {

constexpr double kWidth = 1000;
constexpr double kHeight = 480;
constexpr double kPlotTop = 80;
constexpr double kPlotHeight = 300;
constexpr double kPlotWidth = 380;

struct Panel {
  double left;  // x of the plot area's left edge
  const char* title;
  const char* y_label;
  double StudyRow::*metric;
  bool log_scale;  // for a metric whose lines span orders of magnitude
};

struct LineStyle {
  const char* color;
  const char* dash;  // stroke-dasharray, "" for solid
};

// Okabe-Ito colours stay apart for readers with colour-blindness; "none" is grey and dashed
// because it is the baseline, not a strategy anyone should pick.
LineStyle StyleOf(Strategy strategy) {
  switch (strategy) {
    case Strategy::kNone:
      return {"#7f7f7f", "6 4"};
    case Strategy::kExponential:
      return {"#d55e00", ""};
    case Strategy::kFull:
      return {"#0072b2", ""};
    case Strategy::kEqual:
      return {"#009e73", ""};
    case Strategy::kDecorrelated:
      return {"#cc79a7", ""};
  }
  return {"#000000", ""};
}

const char* LegendLabel(Strategy strategy) {
  switch (strategy) {
    case Strategy::kNone:
      return "none (retry at once)";
    case Strategy::kExponential:
      return "exponential, no jitter";
    case Strategy::kFull:
      return "full jitter";
    case Strategy::kEqual:
      return "equal jitter";
    case Strategy::kDecorrelated:
      return "decorrelated jitter";
  }
  return "";
}

std::string TickLabel(double value) {
  if (value >= 10000 && std::fmod(value, 1000) == 0) return fmt::format("{:.0f}k", value / 1000);
  if (value == std::floor(value)) return fmt::format("{:.0f}", value);
  return fmt::format("{:g}", value);
}

// Maps data values to pixels inside one panel.
struct Scale {
  double left, x_max, y_min, y_max;
  bool log_scale;
  double X(double v) const { return left + v / x_max * kPlotWidth; }
  double Y(double v) const {
    const double share = log_scale ? (std::log10(std::max(v, y_min)) - std::log10(y_min)) /
                                         (std::log10(y_max) - std::log10(y_min))
                                   : v / y_max;
    return kPlotTop + kPlotHeight - share * kPlotHeight;
  }
};

std::vector<Strategy> StrategiesOf(const std::vector<StudyRow>& rows) {
  std::vector<Strategy> strategies;
  for (const StudyRow& row : rows) {
    if (std::find(strategies.begin(), strategies.end(), row.strategy) == strategies.end()) {
      strategies.push_back(row.strategy);
    }
  }
  return strategies;
}

void AppendAxes(std::string& svg, const Panel& panel, const Scale& scale,
                const std::vector<double>& x_ticks, const std::vector<double>& y_ticks) {
  const double bottom = kPlotTop + kPlotHeight;
  const double right = panel.left + kPlotWidth;
  for (double t : y_ticks) {
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#e5e5e5\"/>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n",
        panel.left, scale.Y(t), right, scale.Y(t), panel.left - 6, scale.Y(t) + 4, TickLabel(t));
  }
  for (double t : x_ticks) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#333\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        scale.X(t), bottom, bottom + 5, bottom + 19, TickLabel(t));
  }
  svg += fmt::format(
      "<polyline points=\"{0:.1f},{1:.1f} {0:.1f},{2:.1f} {3:.1f},{2:.1f}\" fill=\"none\" "
      "stroke=\"#333\"/>\n",
      panel.left, kPlotTop, bottom, right);
  svg += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\" font-size=\"15\" "
      "font-weight=\"bold\">{}</text>\n",
      panel.left + kPlotWidth / 2, kPlotTop - 16, panel.title);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">clients</text>\n",
                     panel.left + kPlotWidth / 2, bottom + 40);
  svg += fmt::format(
      "<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}"
      "</text>\n",
      panel.left - 58, kPlotTop + kPlotHeight / 2, panel.y_label);
}

void AppendLines(std::string& svg, const std::vector<StudyRow>& rows, const Panel& panel,
                 const Scale& scale) {
  for (Strategy strategy : StrategiesOf(rows)) {
    std::vector<std::pair<double, double>> points;
    for (const StudyRow& row : rows) {
      if (row.strategy == strategy) points.emplace_back(row.clients, row.*panel.metric);
    }
    std::sort(points.begin(), points.end());
    const LineStyle style = StyleOf(strategy);
    std::string coords;
    for (const auto& [x, y] : points)
      coords += fmt::format("{:.1f},{:.1f} ", scale.X(x), scale.Y(y));
    svg += fmt::format(
        "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2.5\" "
        "stroke-dasharray=\"{}\"><title>{}</title></polyline>\n",
        coords, style.color, style.dash, StrategyName(strategy));
    for (const auto& [x, y] : points) {
      svg += fmt::format(
          "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"><title>{} at {} clients: "
          "{:.1f}</title></circle>\n",
          scale.X(x), scale.Y(y), style.color, StrategyName(strategy), x, y);
    }
  }
}

void AppendPanel(std::string& svg, const std::vector<StudyRow>& rows, const Panel& panel) {
  double x_max = 0;
  double y_min = rows.empty() ? 1 : rows.front().*panel.metric;
  double y_max = 0;
  for (const StudyRow& row : rows) {
    x_max = std::max(x_max, static_cast<double>(row.clients));
    y_min = std::min(y_min, row.*panel.metric);
    y_max = std::max(y_max, row.*panel.metric);
  }
  const std::vector<double> x_ticks = NiceTicks(x_max);
  const std::vector<double> y_ticks = panel.log_scale ? LogTicks(y_min, y_max) : NiceTicks(y_max);
  const Scale scale{panel.left, x_ticks.back(), y_ticks.front(), y_ticks.back(), panel.log_scale};
  AppendAxes(svg, panel, scale, x_ticks, y_ticks);
  AppendLines(svg, rows, panel, scale);
}

void AppendLegend(std::string& svg, const std::vector<StudyRow>& rows) {
  const std::vector<Strategy> strategies = StrategiesOf(rows);
  constexpr double kItemWidth = 180;
  double x = kWidth / 2 - kItemWidth * static_cast<double>(strategies.size()) / 2;
  const double y = kHeight - 28;
  for (Strategy strategy : strategies) {
    const LineStyle style = StyleOf(strategy);
    svg += fmt::format(
        "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
        "stroke-width=\"2.5\" stroke-dasharray=\"{}\"/>\n"
        "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
        x, y, x + 28, y, style.color, style.dash, x + 34, y + 4, LegendLabel(strategy));
    x += kItemWidth;
  }
}

}  // namespace

std::vector<double> NiceTicks(double max) {
  if (!(max > 0)) return {0, 1};
  const double rough = max / 5;
  const double magnitude = std::pow(10, std::floor(std::log10(rough)));
  double step = magnitude * 10;
  for (double factor : {1.0, 2.0, 5.0}) {
    if (magnitude * factor >= rough) {
      step = magnitude * factor;
      break;
    }
  }
  std::vector<double> ticks = {0};
  while (ticks.back() < max * (1 - 1e-12))
    ticks.push_back(step * static_cast<double>(ticks.size()));
  return ticks;
}

std::vector<double> LogTicks(double min, double max) {
  if (!(min > 0)) min = 1;
  max = std::max(max, min);
  std::vector<double> ticks;
  for (double decade = std::pow(10, std::floor(std::log10(min)));; decade *= 10) {
    for (double factor : {1.0, 2.0, 5.0}) {
      const double tick = decade * factor;
      if (tick <= min * (1 + 1e-12)) {
        ticks = {tick};  // the largest step not above min starts the axis
        continue;
      }
      ticks.push_back(tick);
      if (tick >= max * (1 - 1e-12)) return ticks;
    }
  }
}

std::string RenderStudySvg(const std::vector<StudyRow>& rows, int runs) {
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"Helvetica, Arial, sans-serif\" "
      "font-size=\"12\" fill=\"#222\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n"
      "<text x=\"{2:.0f}\" y=\"28\" text-anchor=\"middle\" font-size=\"18\">Clients updating one "
      "row under optimistic concurrency: backoff strategies compared (mean of {3} runs)</text>\n",
      kWidth, kHeight, kWidth / 2, runs);
  AppendPanel(svg, rows, Panel{90, "Work: writes per run", "writes", &StudyRow::writes, false});
  // Exponential backoff without jitter takes ten times longer than the rest; a log axis keeps
  // the other lines apart instead of flattening them at the bottom.
  AppendPanel(svg, rows,
              Panel{590, "Time until the last client succeeds", "milliseconds (log scale)",
                    &StudyRow::time_ms, true});
  AppendLegend(svg, rows);
  svg += "</svg>\n";
  return svg;
}

}  // namespace idem::sim
