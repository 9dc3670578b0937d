#include "sim/backoff_report.h"

#include <gtest/gtest.h>

#include "sim/backoff_chart.h"

namespace idem::sim {
namespace {

const std::vector<StudyRow> kRows = {
    {Strategy::kNone, 10, 55.5, 120.25},
    {Strategy::kFull, 10, 20, 90.5},
    {Strategy::kNone, 50, 1234.5, 700},
    {Strategy::kFull, 50, 140.125, 450.75},
};

TEST(BackoffReport, JsonIsAnArrayOfTheFourContractFields) {
  EXPECT_EQ(
      FormatStudyJson(kRows),
      "[\n"
      "  {\"strategy\": \"none\", \"clients\": 10, \"writes\": 55.500, \"time_ms\": 120.250},\n"
      "  {\"strategy\": \"full\", \"clients\": 10, \"writes\": 20.000, \"time_ms\": 90.500},\n"
      "  {\"strategy\": \"none\", \"clients\": 50, \"writes\": 1234.500, \"time_ms\": "
      "700.000},\n"
      "  {\"strategy\": \"full\", \"clients\": 50, \"writes\": 140.125, \"time_ms\": "
      "450.750}\n"
      "]\n");
  EXPECT_EQ(FormatStudyJson({}), "[]\n");
}

TEST(BackoffReport, CsvHasAHeaderAndOneLinePerRow) {
  EXPECT_EQ(FormatStudyCsv(kRows),
            "strategy,clients,writes,time_ms\n"
            "none,10,55.500,120.250\n"
            "full,10,20.000,90.500\n"
            "none,50,1234.500,700.000\n"
            "full,50,140.125,450.750\n");
}

TEST(BackoffReport, TableHasOneGridPerMetricWithAColumnPerStrategy) {
  const std::string table = FormatStudyTable(kRows, 7);
  EXPECT_NE(table.find("Writes per run (work done), mean of 7 runs"), std::string::npos);
  EXPECT_NE(table.find("Time until the last client succeeds (ms), mean of 7 runs"),
            std::string::npos);
  EXPECT_NE(table.find(" clients          none          full\n"), std::string::npos);
  EXPECT_NE(table.find("      50        1234.5         140.1\n"), std::string::npos);
  EXPECT_NE(table.find("      10         120.2          90.5\n"), std::string::npos);
}

TEST(BackoffChart, TicksAreRoundStepsCoveringTheMaximum) {
  EXPECT_EQ(NiceTicks(100), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(NiceTicks(2345), (std::vector<double>{0, 500, 1000, 1500, 2000, 2500}));
  EXPECT_EQ(NiceTicks(7), (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(NiceTicks(0), (std::vector<double>{0, 1}));
}

TEST(BackoffChart, LogTicksRunOneTwoFiveFromBelowTheMinimumToAboveTheMaximum) {
  EXPECT_EQ(LogTicks(375, 63819),
            (std::vector<double>{200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}));
  EXPECT_EQ(LogTicks(100, 100), (std::vector<double>{100, 200}));
  EXPECT_EQ(LogTicks(0, 3), (std::vector<double>{1, 2, 5}));
}

TEST(BackoffChart, SvgHasTwoPanelsALinePerStrategyAndALegend) {
  const std::string svg = RenderStudySvg(kRows, 7);
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_NE(svg.find("Work: writes per run"), std::string::npos);
  EXPECT_NE(svg.find("Time until the last client succeeds"), std::string::npos);
  EXPECT_NE(svg.find("mean of 7 runs"), std::string::npos);
  std::size_t lines = 0;
  for (std::size_t at = svg.find("<title>none</title>"); at != std::string::npos;
       at = svg.find("<title>none</title>", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 2u);                                           // one line per panel
  EXPECT_NE(svg.find(">full jitter</text>"), std::string::npos);  // legend entries
  EXPECT_NE(svg.find(">none (retry at once)</text>"), std::string::npos);
}

}  // namespace
}  // namespace idem::sim
