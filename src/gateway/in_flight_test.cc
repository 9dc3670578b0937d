#include "gateway/in_flight.h"

#include <gtest/gtest.h>

namespace idem::gateway {
namespace {

using std::chrono::steady_clock;

TEST(InFlight, AKeyWhoseOutcomeIsBeingWrittenIsNoLongerRenewedButStillHeld) {
  InFlight in_flight;
  const uint64_t ticket = in_flight.HoldKey({.tenant = "", .key = "k"}, 7, steady_clock::now());
  EXPECT_TRUE(in_flight.Renewing(ticket));

  in_flight.StopRenewing(ticket);

  EXPECT_FALSE(in_flight.Renewing(ticket));
  const std::vector<InFlight::HeldKey> held = in_flight.HeldKeys();
  ASSERT_EQ(held.size(), 1u);
  EXPECT_EQ(held[0].phase, InFlight::Phase::kWriting);
  EXPECT_EQ(held[0].fence, 7);
}

TEST(InFlight, AForgottenKeyIsNeitherRenewedNorHeld) {
  InFlight in_flight;
  const uint64_t ticket = in_flight.HoldKey({.tenant = "", .key = "k"}, 7, steady_clock::now());
  in_flight.ForgetKey(ticket);
  EXPECT_FALSE(in_flight.Renewing(ticket));
  EXPECT_TRUE(in_flight.HeldKeys().empty());
  in_flight.StopRenewing(ticket);  // a ticket already forgotten is ignored
  EXPECT_TRUE(in_flight.HeldKeys().empty());
}

TEST(InFlight, ARenewalNeverMovesTheKnownLeaseEndBackwards) {
  InFlight in_flight;
  const auto now = steady_clock::now();
  const uint64_t ticket = in_flight.HoldKey({.tenant = "", .key = "k"}, 1, now);
  in_flight.RenewKey(ticket, now + std::chrono::seconds(5));
  in_flight.RenewKey(ticket, now + std::chrono::seconds(2));
  EXPECT_EQ(in_flight.LeaseEnd(ticket), now + std::chrono::seconds(5));
}

// An outcome the store did not take at once keeps its key held and heartbeated; a drain waits for
// it as for a request.
TEST(InFlight, APendingOutcomeIsRenewedAndHeldAndTheDrainWaitsForIt) {
  InFlight in_flight;
  const uint64_t ticket = in_flight.HoldKey({.tenant = "", .key = "k"}, 3, steady_clock::now());
  in_flight.StopRenewing(ticket);
  in_flight.KeepPending(ticket, false);
  EXPECT_TRUE(in_flight.Renewing(ticket));
  EXPECT_FALSE(in_flight.Running(ticket));
  EXPECT_FALSE(in_flight.WaitIdle(std::chrono::milliseconds(1)));
  in_flight.ForgetKey(ticket);
  EXPECT_TRUE(in_flight.WaitIdle(std::chrono::milliseconds(1)));
}

// A moved fence is reported with the key only while its upstream call runs (so that the call is
// cancelled); a pending write's own result decides otherwise.
TEST(InFlight, ALostKeyIsReturnedForCancellingOnlyWhileItsCallRuns) {
  InFlight in_flight;
  const uint64_t running = in_flight.HoldKey({.tenant = "", .key = "a"}, 1, steady_clock::now());
  const uint64_t pending = in_flight.HoldKey({.tenant = "", .key = "b"}, 1, steady_clock::now());
  in_flight.KeepPending(pending, false);
  const std::optional<InFlight::HeldKey> lost = in_flight.MarkLost(running);
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->scope.key, "a");
  EXPECT_TRUE(in_flight.Lost(running));
  EXPECT_FALSE(in_flight.MarkLost(pending).has_value());
  EXPECT_FALSE(in_flight.MarkLost(99).has_value());
}

}  // namespace
}  // namespace idem::gateway
