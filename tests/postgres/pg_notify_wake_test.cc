// The relay's LISTEN/NOTIFY wake (src/relay/pg_notify_wake.h) on the fixture's server: the wake
// is level-triggered. A notification that arrives while no Wait runs (the relay is in the middle
// of a pass) ends the next Wait at once, as does an Interrupt made before it; neither is lost
// until the poll interval.
//
// Each Wait is given far longer than any wake could take (kLongWait), and the test asserts only
// that it returned well before that: a lost notification could end it no earlier.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "pg_test_support.h"
#include "relay/pg_notify_wake.h"

namespace idem::relay {
namespace {

constexpr Millis kLongWait{30'000};
constexpr auto kFarBelowTheWait = std::chrono::seconds(15);

class PgNotifyWakeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto uri = pgtest::ServerUri();
    ASSERT_TRUE(uri.ok()) << uri.status();
    // A channel of this test alone: idem_outbox is shared by every relay test on the server.
    static int tests = 0;
    channel_ = "idem_wake_test_" + std::to_string(::getpid()) + "_" + std::to_string(++tests);
    auto wake = PgNotifyWake::Create({.conninfo = *uri, .channel = channel_});
    ASSERT_TRUE(wake.ok()) << wake.status();
    wake_ = std::move(*wake);
  }

  void Notify() {
    auto sent = pgtest::AdminQuery("", "NOTIFY \"" + channel_ + "\"");
    ASSERT_TRUE(sent.ok()) << sent.status();
  }

  // How long Wait(kLongWait) took.
  std::chrono::steady_clock::duration TimedWait() {
    const auto start = std::chrono::steady_clock::now();
    wake_->Wait(kLongWait);
    return std::chrono::steady_clock::now() - start;
  }

  std::string channel_;
  std::unique_ptr<PgNotifyWake> wake_;
};

TEST_F(PgNotifyWakeTest, NotificationWhileNoWaitRunsEndsTheNextWaitAtOnce) {
  // The relay is publishing a batch: nobody waits when the commit's notification arrives.
  Notify();
  EXPECT_LT(TimedWait(), kFarBelowTheWait) << "the notification was lost until the poll interval";
  EXPECT_TRUE(wake_->listening());
}

TEST_F(PgNotifyWakeTest, NotificationDuringEachPassWakesTheWaitAfterIt) {
  for (int pass = 1; pass <= 3; ++pass) {
    Notify();
    EXPECT_LT(TimedWait(), kFarBelowTheWait) << "the notification during pass " << pass;
  }
}

TEST_F(PgNotifyWakeTest, InterruptBeforeTheWaitIsNotLost) {
  wake_->Interrupt();
  EXPECT_LT(TimedWait(), kFarBelowTheWait);
}

}  // namespace
}  // namespace idem::relay
