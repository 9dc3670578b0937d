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
  EXPECT_TRUE(held[0].finishing);
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

}  // namespace
}  // namespace idem::gateway
