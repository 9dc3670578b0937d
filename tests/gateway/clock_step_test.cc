// End-to-end: two gateways on one SQLite file, the second one's wall clock 9.5 s ahead of the
// first's (libfaketime steps its CLOCK_REALTIME and leaves CLOCK_BOOTTIME alone, as an NTP step
// or a VM resume does to one host's wall clock). SQLite leases run on the host's boot clock, so
// while the first gateway's upstream call runs, retries on the second get 409, never a takeover,
// and the upstream runs once. SQLite only: PostgreSQL leases run on the database server's clock.
#include <thread>

#include "gateway_fixture.h"

namespace idem::e2e {
namespace {

// The command put before the second gateway's: its wall clock 9.5 s ahead, its boot clock (and
// its monotonic clock) untouched. ASan must be told that it is not the first library loaded.
std::vector<std::string> WallClockAhead() {
  const char* asan = std::getenv("ASAN_OPTIONS");
  const std::string asan_options =
      (asan != nullptr && *asan != '\0' ? std::string(asan) + ":" : std::string()) +
      "verify_asan_link_order=0";
  return {"/usr/bin/env", "LD_PRELOAD=" IDEM_LIBFAKETIME, "FAKETIME=+9.5s",
          "FAKETIME_DONT_FAKE_MONOTONIC=1", "ASAN_OPTIONS=" + asan_options};
}

class ClockStepE2E : public GatewayFixture {};

TEST_F(ClockStepE2E, AWallClockStepOnAnotherGatewayTakesNoLiveLeaseOver) {
  const std::vector<std::string> flags = {"--lease", "10s", "--upstream-timeout", "8s"};
  StartGateway(flags);
  const int port_b = FreePort();
  launcher_ = WallClockAhead();
  std::unique_ptr<Child> b = Spawn(port_b, FreePort(), flags, Upstream(), dir_ + "/idem-b.log");
  launcher_.clear();
  ASSERT_TRUE(b->Running()) << ReadFile(dir_ + "/idem-b.log");

  Response first;
  std::thread client([&] { first = Post("order-step", kBody, {{"X-Charges-Hold", "step"}}); });
  ASSERT_TRUE(Eventually([&] { return Stat("held") == 1; }));
  // The first gateway's upstream call runs about 5 s; its lease (10 s) lives all along. By the
  // second gateway's wall clock it lapses 0.5 s after each claim or heartbeat: retries across
  // the whole call meet those moments.
  const Headers json = {{"Idempotency-Key", "order-step"}, {"Content-Type", "application/json"}};
  const auto call_ends = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  int retries = 0;
  while (std::chrono::steady_clock::now() < call_ends) {
    const Response retry = Send(port_b, "POST", "/charges", json, kBody);
    ++retries;
    if (retry.status != 409) {
      ADD_FAILURE() << "retry " << retries << " on the gateway whose wall clock is ahead got "
                    << retry.status << " instead of 409: " << retry.body << retry.error;
      break;
    }
    // Paces the retries over the call (it synchronises nothing): about four a second.
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_GE(retries, 10);
  Send(charges_port_, "POST", "/release/step");
  client.join();
  EXPECT_EQ(first.status, 201) << first.body << first.error;
  EXPECT_EQ(first.HeaderCount("Idempotent-Replayed"), 0);
  const Response replay = Send(port_b, "POST", "/charges", json, kBody);
  EXPECT_EQ(replay.status, 201) << replay.body << replay.error;
  EXPECT_EQ(replay.Header("Idempotent-Replayed"), "true");
  EXPECT_EQ(Stat("calls"), 1) << Stats();
  if (HasFailure())
    std::cerr << "idem serve (wall clock ahead) log:\n" << ReadFile(dir_ + "/idem-b.log") << "\n";
}

}  // namespace
}  // namespace idem::e2e
