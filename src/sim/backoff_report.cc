#include "sim/backoff_report.h"

#include <fmt/format.h>

#include <algorithm>

namespace idem::sim {
namespace {

// The distinct client counts and strategies, in the order the study produced them.
struct Grid {
  std::vector<int> clients;
  std::vector<Strategy> strategies;
};

Grid GridOf(const std::vector<StudyRow>& rows) {
  Grid grid;
  for (const StudyRow& row : rows) {
    if (std::find(grid.clients.begin(), grid.clients.end(), row.clients) == grid.clients.end()) {
      grid.clients.push_back(row.clients);
    }
    if (std::find(grid.strategies.begin(), grid.strategies.end(), row.strategy) ==
        grid.strategies.end()) {
      grid.strategies.push_back(row.strategy);
    }
  }
  return grid;
}

const StudyRow* Find(const std::vector<StudyRow>& rows, int clients, Strategy strategy) {
  for (const StudyRow& row : rows) {
    if (row.clients == clients && row.strategy == strategy) return &row;
  }
  return nullptr;
}

void AppendGrid(std::string& out, const std::vector<StudyRow>& rows, const Grid& grid,
                double StudyRow::*metric) {
  out += fmt::format("{:>8}", "clients");
  for (Strategy strategy : grid.strategies) out += fmt::format(" {:>13}", StrategyName(strategy));
  out += '\n';
  for (int clients : grid.clients) {
    out += fmt::format("{:>8}", clients);
    for (Strategy strategy : grid.strategies) {
      const StudyRow* row = Find(rows, clients, strategy);
      out += row == nullptr ? fmt::format(" {:>13}", "-") : fmt::format(" {:>13.1f}", row->*metric);
    }
    out += '\n';
  }
}

}  // namespace

std::string FormatStudyTable(const std::vector<StudyRow>& rows, int runs) {
  const Grid grid = GridOf(rows);
  std::string out = fmt::format("Writes per run (work done), mean of {} runs\n", runs);
  AppendGrid(out, rows, grid, &StudyRow::writes);
  out += fmt::format("\nTime until the last client succeeds (ms), mean of {} runs\n", runs);
  AppendGrid(out, rows, grid, &StudyRow::time_ms);
  return out;
}

std::string FormatStudyCsv(const std::vector<StudyRow>& rows) {
  std::string out = "strategy,clients,writes,time_ms\n";
  for (const StudyRow& row : rows) {
    out += fmt::format("{},{},{:.3f},{:.3f}\n", StrategyName(row.strategy), row.clients, row.writes,
                       row.time_ms);
  }
  return out;
}

std::string FormatStudyJson(const std::vector<StudyRow>& rows) {
  std::string out = "[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const StudyRow& row = rows[i];
    out += fmt::format(
        "{}\n  {{\"strategy\": \"{}\", \"clients\": {}, \"writes\": {:.3f}, \"time_ms\": {:.3f}}}",
        i == 0 ? "" : ",", StrategyName(row.strategy), row.clients, row.writes, row.time_ms);
  }
  out += rows.empty() ? "]\n" : "\n]\n";
  return out;
}

}  // namespace idem::sim
