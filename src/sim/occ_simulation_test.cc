#include "sim/occ_simulation.h"

#include <gtest/gtest.h>

namespace idem::sim {
namespace {

OccRunConfig Config(Strategy strategy, int clients) {
  OccRunConfig config;
  config.strategy = strategy;
  config.clients = clients;
  return config;
}

TEST(OccSimulation, LoneClientWritesOnceAfterFourHops) {
  OccRunConfig config = Config(Strategy::kFull, 1);
  config.network = NetworkModel{10, 1e-9};  // every hop 10 ms
  absl::StatusOr<OccRunResult> result = SimulateOccRun(config, 1);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->writes, 1);
  // read request, read reply, write request, write reply
  EXPECT_NEAR(result->time_ms, 40, 1e-6);
}

TEST(OccSimulation, EveryClientEventuallyWinsSoWritesAtLeastClients) {
  for (Strategy strategy : AllStrategies()) {
    absl::StatusOr<OccRunResult> result = SimulateOccRun(Config(strategy, 30), 5);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_GE(result->writes, 30) << StrategyName(strategy);
    EXPECT_GT(result->time_ms, 0);
  }
}

TEST(OccSimulation, ContentionMakesLosersWriteAgain) {
  absl::StatusOr<OccRunResult> result = SimulateOccRun(Config(Strategy::kNone, 20), 3);
  ASSERT_TRUE(result.ok());
  EXPECT_GT(result->writes, 20);
}

// Two clients in lockstep (no network noise): both read version 0, one write wins and the
// loser learns it lost at 40 ms, backs off base * 2 = 10 ms, then needs four more hops.
TEST(OccSimulation, ExponentialLoserWaitsTwiceBaseBeforeItsSecondTry) {
  OccRunConfig config = Config(Strategy::kExponential, 2);
  config.network = NetworkModel{10, 1e-9};
  absl::StatusOr<OccRunResult> result = SimulateOccRun(config, 9);
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->writes, 3);
  EXPECT_NEAR(result->time_ms, 40 + 10 + 40, 1e-6);
}

TEST(OccSimulation, SameSeedSameRunOtherSeedOtherRun) {
  const OccRunConfig config = Config(Strategy::kDecorrelated, 50);
  absl::StatusOr<OccRunResult> a = SimulateOccRun(config, 11);
  absl::StatusOr<OccRunResult> b = SimulateOccRun(config, 11);
  absl::StatusOr<OccRunResult> c = SimulateOccRun(config, 12);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->writes, b->writes);
  EXPECT_EQ(a->time_ms, b->time_ms);
  EXPECT_NE(a->time_ms, c->time_ms);
}

TEST(OccSimulation, RejectsBadSettingsWithInvalidArgument) {
  OccRunConfig zero_clients = Config(Strategy::kFull, 0);
  EXPECT_EQ(SimulateOccRun(zero_clients, 1).status().code(), absl::StatusCode::kInvalidArgument);
  OccRunConfig cap_below_base = Config(Strategy::kFull, 3);
  cap_below_base.backoff = BackoffParams{50, 10};
  EXPECT_EQ(SimulateOccRun(cap_below_base, 1).status().code(), absl::StatusCode::kInvalidArgument);
  OccRunConfig no_spread = Config(Strategy::kFull, 3);
  no_spread.network.sd_ms = 0;
  EXPECT_EQ(SimulateOccRun(no_spread, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::sim
