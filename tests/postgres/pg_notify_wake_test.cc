// The relay's LISTEN/NOTIFY wake (src/relay/pg_notify_wake.h) on the fixture's server: the wake
// is level-triggered. A notification that arrives while no Wait runs (the relay is in the middle
// of a pass) ends the next Wait at once, as does an Interrupt made before it; neither is lost
// until the poll interval.
//
// Each Wait is given far longer than any wake could take (kLongWait), and the test asserts only
// that it returned well before that: a lost notification could end it no earlier.
#include "relay/pg_notify_wake.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>

#include "idem/outbox.h"
#include "idem/outbox_admin.h"
#include "pg_test_support.h"

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

// `idem outbox redrive` notifies the relays' channel (migration 5), as an INSERT does: a
// re-driven message goes out within milliseconds, not at the end of --poll. The notification
// carries the store's schema, which tells it apart from other tests' on the shared server.
TEST(OutboxRedriveNotify, RedriveNotifiesTheRelaysChannelAtCommit) {
  auto server = pgtest::ServerUri();
  ASSERT_TRUE(server.ok()) << server.status();
  auto fresh = pgtest::CreateFreshSchemaUri();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  ManualClock clock;
  auto store = OpenStore(fresh->uri, {.clock = &clock});
  ASSERT_TRUE(store.ok()) << store.status();
  std::string id;
  {
    auto tx = (*store)->Begin();
    ASSERT_TRUE(tx.ok()) << tx.status();
    auto added =
        AddOutboxMessage(**tx, {.topic = "t", .aggregate_key = "a", .payload = "p"}, clock);
    ASSERT_TRUE(added.ok()) << added.status();
    id = *added;
    ASSERT_TRUE((*tx)->Execute("UPDATE idem_outbox SET state = 'dead'").ok());
    ASSERT_TRUE((*tx)->Commit().ok());
  }
  std::unique_ptr<PGconn, decltype(&PQfinish)> listener(PQconnectdb(server->c_str()), &PQfinish);
  ASSERT_EQ(PQstatus(listener.get()), CONNECTION_OK) << PQerrorMessage(listener.get());
  PQclear(PQexec(listener.get(), "LISTEN idem_outbox"));

  ASSERT_EQ(RedriveOutbox(**store, {.id = id}, clock.NowMillis()).value_or(0), 1);

  // Waits for this schema's notification (others' may come first), at most kLongWait.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLongWait);
  bool notified = false;
  while (!notified && std::chrono::steady_clock::now() < deadline) {
    pollfd socket{.fd = PQsocket(listener.get()), .events = POLLIN, .revents = 0};
    ::poll(&socket, 1, 100);
    ASSERT_EQ(PQconsumeInput(listener.get()), 1) << PQerrorMessage(listener.get());
    while (PGnotify* notify = PQnotifies(listener.get())) {
      notified = notified || fresh->schema == notify->extra;
      PQfreemem(notify);
    }
  }
  EXPECT_TRUE(notified) << "no notification on idem_outbox for schema " << fresh->schema;
}

}  // namespace
}  // namespace idem::relay
