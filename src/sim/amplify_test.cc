#include "sim/amplify.h"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/amplify_report.h"

namespace idem::sim {
namespace {

AmplifyRow RowOf(const std::vector<AmplifyRow>& rows, Containment containment) {
  for (const AmplifyRow& row : rows) {
    if (row.containment == containment) return row;
  }
  ADD_FAILURE() << "no row " << ContainmentName(containment);
  return {};
}

TEST(Amplify, UncontainedRetriesMultiplyToAttemptsPowerLayers) {
  absl::StatusOr<std::vector<AmplifyRow>> rows = SimulateAmplification(AmplifyConfig{});
  ASSERT_TRUE(rows.ok()) << rows.status();
  const AmplifyRow none = RowOf(*rows, Containment::kNone);
  EXPECT_EQ(none.bottom_calls, 81);              // 3^4
  EXPECT_EQ(none.total_calls, 3 + 9 + 27 + 81);  // every hop
}

TEST(Amplify, TenPercentBudgetPerLayerLeavesAboutOnePointOnePowerLayers) {
  absl::StatusOr<std::vector<AmplifyRow>> rows = SimulateAmplification(AmplifyConfig{});
  ASSERT_TRUE(rows.ok());
  const AmplifyRow budget = RowOf(*rows, Containment::kBudget);
  // 1000 -> 1100 -> 1210 -> 1331 -> 1464 calls (10% of each layer's first tries, rounded down).
  EXPECT_DOUBLE_EQ(budget.bottom_calls, 1.464);
  EXPECT_DOUBLE_EQ(budget.total_calls, (1100 + 1210 + 1331 + 1464) / 1000.0);
  EXPECT_NEAR(budget.bottom_calls, std::pow(1.1, 4), 0.01);
}

TEST(Amplify, BudgetFloorAddsRetriesEvenWithoutTraffic) {
  AmplifyConfig config;
  config.layers = 1;
  config.requests = 1;
  config.budget_percent = 0;
  config.budget_floor = 5;
  absl::StatusOr<std::vector<AmplifyRow>> rows = SimulateAmplification(config);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(RowOf(*rows, Containment::kBudget).bottom_calls, 3);  // capped by attempts
  config.budget_floor = 0;
  rows = SimulateAmplification(config);
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(RowOf(*rows, Containment::kBudget).bottom_calls, 1);
}

TEST(Amplify, RetryingAtOneLayerOnlySendsAttemptsCallsToTheBottom) {
  absl::StatusOr<std::vector<AmplifyRow>> rows = SimulateAmplification(AmplifyConfig{});
  ASSERT_TRUE(rows.ok());
  const AmplifyRow one = RowOf(*rows, Containment::kOneLayer);
  EXPECT_EQ(one.bottom_calls, 3);
  EXPECT_EQ(one.total_calls, 12);
}

TEST(Amplify, RejectsSettingsOutOfRangeWithInvalidArgument) {
  for (AmplifyConfig config : {AmplifyConfig{0, 3, 10, 0, 1000}, AmplifyConfig{4, 0, 10, 0, 1000},
                               AmplifyConfig{11, 3, 10, 0, 1000}, AmplifyConfig{4, 3, 101, 0, 1000},
                               AmplifyConfig{4, 3, 10, -1, 1000}, AmplifyConfig{4, 3, 10, 0, 0}}) {
    EXPECT_EQ(SimulateAmplification(config).status().code(), absl::StatusCode::kInvalidArgument);
  }
}

TEST(AmplifyReport, TablePrintsWholeFiguresWithoutDecimals) {
  absl::StatusOr<std::vector<AmplifyRow>> rows = SimulateAmplification(AmplifyConfig{});
  ASSERT_TRUE(rows.ok());
  const std::string table = FormatAmplifyTable(*rows, AmplifyConfig{});
  EXPECT_NE(table.find("every layer retries"), std::string::npos);
  EXPECT_NE(table.find(" 81 "), std::string::npos);
  EXPECT_NE(table.find(" 1.46 "), std::string::npos);
  EXPECT_NE(table.find("retry budget 10% per layer"), std::string::npos);
}

TEST(AmplifyReport, JsonListsEveryContainment) {
  absl::StatusOr<std::vector<AmplifyRow>> rows = SimulateAmplification(AmplifyConfig{});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(FormatAmplifyJson(*rows, AmplifyConfig{}),
            "[\n"
            "  {\"containment\": \"none\", \"layers\": 4, \"attempts\": 3, \"bottom_calls\": 81, "
            "\"total_calls\": 120},\n"
            "  {\"containment\": \"budget\", \"layers\": 4, \"attempts\": 3, \"bottom_calls\": "
            "1.4640, \"total_calls\": 5.1050},\n"
            "  {\"containment\": \"one-layer\", \"layers\": 4, \"attempts\": 3, \"bottom_calls\": "
            "3, \"total_calls\": 12}\n"
            "]\n");
}

}  // namespace
}  // namespace idem::sim
