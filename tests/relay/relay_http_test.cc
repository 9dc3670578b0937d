// `idem relay --sink http` end to end: the real binary publishing a store's outbox (filled
// through the library) to a real HTTP receiver (ScriptedServer), checking Standard Webhooks
// signatures, ids and order per aggregate. Compiled once, run on SQLite and, with
// IDEM_E2E_STORE=postgres, on the "postgres" CTest fixture's server (a fresh schema per test).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "idem/webhook_signature.h"
#include "idem_process.h"
#include "relay_fixture.h"
#include "relay_process.h"
namespace idem::testing {
namespace {

using RelayHttp = RelayE2e;
// Tests of one store only, run by that store's registration alone.
using RelayHttpOnSqlite = OnlyOn<RelayE2e, E2eStore::kSqlite>;
using RelayHttpOnPostgres = OnlyOn<RelayE2e, E2eStore::kPostgres>;  // LISTEN/NOTIFY

TEST_F(RelayHttp, DeliversEveryMessageSignedWithItsIdAndInOrderPerAggregate) {
  std::vector<std::pair<std::string, std::string>> messages;
  for (int i = 0; i < 12; ++i) {
    messages.push_back({"agg-" + std::to_string(i % 3), "{\"n\":" + std::to_string(i) + "}"});
  }
  const std::vector<std::string> ids = Add(messages);
  CallRun run = Idem(RelayArgs({"--once", "--batch", "5"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string key = *DecodeWebhookSecret(kSecret);
  const int64_t now = time(nullptr);
  std::map<std::string, std::vector<std::string>> per_aggregate;
  std::map<std::string, std::string> aggregate_of;
  for (size_t i = 0; i < ids.size(); ++i) aggregate_of[ids[i]] = messages[i].first;
  const std::vector<SeenRequest> seen = server_->requests();
  ASSERT_EQ(seen.size(), ids.size());
  for (const SeenRequest& r : seen) {
    const std::string id = Header(r, "webhook-id");
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/hooks");
    EXPECT_EQ(r.idempotency_key, id);
    EXPECT_EQ(Header(r, "content-type"), "application/json");
    EXPECT_EQ(Header(r, "x-tenant"), "acme");
    EXPECT_TRUE(VerifyWebhook(key, id, Header(r, "webhook-timestamp"),
                              Header(r, "webhook-signature"), r.body, now, 60)
                    .ok())
        << id;
    per_aggregate[aggregate_of[id]].push_back(id);
  }
  for (const auto& [aggregate, got] : per_aggregate) {
    std::vector<std::string> expected;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (messages[i].first == aggregate) expected.push_back(ids[i]);
    }
    EXPECT_EQ(got, expected) << aggregate;
  }
  for (const std::string& id : ids) EXPECT_EQ(StateOf(id), OutboxState::kSent);
  EXPECT_TRUE(Idem(RelayArgs({"--once"})).exit_code == 0);
  EXPECT_EQ(server_->requests().size(), ids.size());  // nothing is sent twice
}

TEST_F(RelayHttp, ServiceUnavailableWithRetryAfterIsRetriedThenDelivered) {
  const std::vector<std::string> ids = Add({{"a", "{\"n\":1}"}, {"a", "{\"n\":2}"}});
  int calls = 0;
  SetAnswer([&](const SeenRequest&) {
    if (++calls == 1) {
      return ScriptedReply{
          "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 0\r\n"
          "Content-Length: 4\r\n\r\ndown"};
    }
    return ScriptedReply{http::testing::Ok("{}")};
  });
  CallRun run = Idem(RelayArgs({"--once"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<SeenRequest> seen = server_->requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(Header(seen[0], "webhook-id"), ids[0]);
  EXPECT_EQ(Header(seen[1], "webhook-id"), ids[0]);  // the follower waited for the retry
  EXPECT_EQ(Header(seen[2], "webhook-id"), ids[1]);
  auto first = GetOutboxMessage(*store_, ids[0]);
  EXPECT_EQ(first->state, OutboxState::kSent);
  EXPECT_EQ(first->attempts, 2);
}

TEST_F(RelayHttp, PoisonMessageEndsDeadAfterItsAttemptsAndIsListed) {
  const std::vector<std::string> ids = Add({{"a", "poison"}, {"a", "after"}, {"b", "fine"}});
  SetAnswer([](const SeenRequest& r) {
    if (r.body == "poison") {
      return ScriptedReply{"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 5\r\n\r\nbroke"};
    }
    return ScriptedReply{http::testing::Ok("{}")};
  });
  CallRun run = Idem(RelayArgs({"--once", "--max-attempts", "3"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(StateOf(ids[0]), OutboxState::kDead);
  EXPECT_EQ(StateOf(ids[1]), OutboxState::kPending);  // held back behind the dead message
  EXPECT_EQ(StateOf(ids[2]), OutboxState::kSent);
  CallRun listed = Idem({"outbox", "list", "--store", uri_, "--state", "dead"});
  EXPECT_NE(listed.out.find(ids[0]), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("HTTP 500"), std::string::npos) << listed.out;
  ASSERT_EQ(Idem(RelayArgs({"--once", "--let-dead-pass"})).exit_code, 0);
  EXPECT_EQ(StateOf(ids[1]), OutboxState::kSent);
}

TEST_F(RelayHttp, GoneEndpointStopsDeliveryWithExit4AndKeepsMessagesPending) {
  const std::vector<std::string> ids = Add({{"a", "1"}, {"b", "2"}});
  SetAnswer([](const SeenRequest&) {
    return ScriptedReply{"HTTP/1.1 410 Gone\r\nContent-Length: 4\r\n\r\ngone"};
  });
  CallRun run = Idem(RelayArgs({"--once"}));
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_NE(run.err.find("410"), std::string::npos) << run.err;
  EXPECT_EQ(server_->requests().size(), 1u);
  for (const std::string& id : ids) EXPECT_EQ(StateOf(id), OutboxState::kPending);
}

TEST_F(RelayHttp, RefusedConnectionIsRetriedNotLost) {
  const std::vector<std::string> ids = Add({{"a", "1"}});
  const std::string url = server_->Url("/hooks");
  server_.reset();  // nothing listens there any more
  std::vector<std::string> args = {
      "relay",    "--store", uri_,     "--sink",         "http", "--url",         url,
      "--secret", kSecret,   "--once", "--backoff-base", "1h",   "--backoff-cap", "2h"};
  CallRun run = Idem(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto m = GetOutboxMessage(*store_, ids[0]);
  EXPECT_EQ(m->state, OutboxState::kPending);
  EXPECT_EQ(m->attempts, 1);
  EXPECT_FALSE(m->last_error.empty());
}

TEST_F(RelayHttp, SigtermFinishesTheBatchAndExits0) {
  const std::vector<std::string> ids = Add({{"a", "1"}, {"b", "2"}});
  Background relay(RelayArgs({"--poll", "50ms"}));
  WaitForRequests(2);
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
  for (const std::string& id : ids) EXPECT_EQ(StateOf(id), OutboxState::kSent);
}

TEST_F(RelayHttp, BadInputIsAUsageError) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::string url = server_->Url("/hooks");
  const std::vector<Case> cases = {
      {{"--sink", "kafka", "--url", url, "--secret", kSecret}, "--sink"},
      {{"--sink", "http", "--secret", kSecret}, "--url"},
      {{"--sink", "http", "--url", "ftp://x/", "--secret", kSecret}, "--url"},
      {{"--sink", "http", "--url", url, "--secret", "not-a-secret"}, "whsec_"},
      {{"--sink", "http", "--url", url, "--secret", "whsec_!!"}, "base64"},
      {{"--sink", "http", "--url", url, "--secret", kSecret, "--batch", "0"}, "batch"},
      {{"--sink", "http", "--url", url, "--secret", kSecret, "--timeout", "1m"}, "lease"},
      {{"--sink", "http", "--url", url, "--secret", kSecret, "--poll", "soon"}, "--poll"},
      {{"--sink", "http", "--url", url, "--secret", kSecret, "--jitter", "lots"}, "--jitter"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"relay", "--store", uri_};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CallRun r = Idem(args);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), std::string::npos) << r.err;
  }
  EXPECT_TRUE(server_->requests().empty());
}

#ifdef IDEM_TEST_WITH_POSTGRES
// With a 30 s poll interval, only the NOTIFY of the commit can bring each message out in time: each
// is committed once the relay says (on its /metrics) that it waits between passes.
TEST_F(RelayHttpOnPostgres, NotifyDeliversACommitWithinMillisecondsNotThePollInterval) {
  const int admin = e2e::FreePort();
  Background relay(RelayArgs({"--poll", "30s", "--admin", "127.0.0.1:" + std::to_string(admin)}));
  auto waiting = [&] {
    return e2e::MetricValue(e2e::Send(admin, "GET", "/metrics").body, "idem_relay_waiting") == 1;
  };
  std::vector<int64_t> delays_ms;
  for (int n = 1; n <= 5; ++n) {
    ASSERT_TRUE(e2e::Eventually(waiting)) << relay.err();
    const auto before_commit = std::chrono::steady_clock::now();
    Add({{"agg-" + std::to_string(n % 2), "{\"n\":" + std::to_string(n) + "}"}});
    ASSERT_TRUE(SeenWithin(n, std::chrono::seconds(10)))
        << "message " << n << " not delivered within 10 s of its commit: " << relay.err();
    delays_ms.push_back(std::chrono::duration_cast<Millis>(SeenAt(n) - before_commit).count());
  }
  for (int64_t delay : delays_ms) {
    EXPECT_LT(delay, 5'000);
    std::printf("commit to delivery: %lld ms\n", static_cast<long long>(delay));
  }
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
  EXPECT_NE(relay.err().find("woken by LISTEN idem_outbox"), std::string::npos) << relay.err();
}

// A commit made while the relay is publishing (the receiver holds the first delivery until the
// second message has committed) goes out after that pass, not at the end of a 60 s poll: the
// wake is level-triggered (a notification during a pass is not lost), and a pass that published
// something is followed at once by another claim.
TEST_F(RelayHttpOnPostgres, CommitDuringAPassIsDeliveredWithoutWaitingForThePoll) {
  std::promise<void> first_arrived, second_committed;
  std::shared_future<void> go_on = second_committed.get_future().share();
  std::atomic<int> calls{0};
  SetAnswer([&](const SeenRequest&) {
    if (++calls == 1) {
      first_arrived.set_value();
      go_on.wait_for(std::chrono::seconds(60));  // the pass stays under way meanwhile
    }
    return ScriptedReply{http::testing::Ok("{}")};
  });
  Add({{"a", "1"}});
  Background relay(RelayArgs({"--poll", "60s"}));
  ASSERT_EQ(first_arrived.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready)
      << relay.err();
  Add({{"b", "2"}});
  second_committed.set_value();
  ASSERT_TRUE(SeenWithin(2, std::chrono::seconds(20)))
      << "a commit during a pass waited for the poll interval: " << relay.err();
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
}

TEST_F(RelayHttpOnPostgres, LostListenConnectionIsReestablishedAndWakesTheRelayAgain) {
  Background relay(RelayArgs({"--poll", "30s"}));
  Add({{"a", "1"}});
  ASSERT_TRUE(SeenWithin(1, std::chrono::seconds(10))) << relay.err();
  auto killed = pgtest::AdminQuery(
      "",
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = "
      "'idem-relay-listen-" +
          std::to_string(relay.pid()) + "'");
  ASSERT_TRUE(killed.ok()) << killed.status();
  ASSERT_EQ(killed->size(), 1u);  // the relay's LISTEN connection existed, and is gone
  EXPECT_EQ(killed->at(0).at(0), "t");
  // The relay sees the connection drop, looks once, and LISTENs again on a new connection; a
  // message committed after the next one is delivered can only be woken by the new LISTEN.
  Add({{"a", "2"}});
  ASSERT_TRUE(SeenWithin(2, std::chrono::seconds(10))) << relay.err();
  Add({{"a", "3"}});
  ASSERT_TRUE(SeenWithin(3, std::chrono::seconds(10))) << relay.err();
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
}

// The store disappears mid-batch: while the receiver holds the batch's first delivery, every
// connection of the relay (its store connections and its LISTEN, all named by the URI's
// application_name) is killed. Recording the batch fails, the relay retries the store with
// backoff and reconnects; its lease lapses (--lease 2s) and the batch is published again (at least
// once: the receiver deduplicates on webhook-id). Nothing is lost and every message ends sent.
TEST_F(RelayHttpOnPostgres, StoreConnectionsKilledMidBatchLoseNothing) {
  std::vector<std::pair<std::string, std::string>> messages;
  for (int i = 0; i < 10; ++i) messages.push_back({i % 2 == 0 ? "a" : "b", std::to_string(i)});
  const std::vector<std::string> ids = Add(messages);
  std::promise<void> first_arrived, killed;
  std::shared_future<void> go_on = killed.get_future().share();
  std::set<std::string> delivered;  // guarded by mu_: the answer runs under it
  SetAnswer([&](const SeenRequest& r) {
    if (delivered.empty()) {
      first_arrived.set_value();
      go_on.wait_for(std::chrono::seconds(60));
    }
    delivered.insert(Header(r, "webhook-id"));
    return ScriptedReply{http::testing::Ok("{}")};
  });
  const std::string name = "idem-relay-store-killed-" + std::to_string(::getpid());
  std::vector<std::string> args = RelayArgs({"--lease", "2s", "--timeout", "1s", "--poll", "100ms"});
  args.at(2) = uri_ + "&application_name=" + name;
  Background relay(args);
  ASSERT_EQ(first_arrived.get_future().wait_for(std::chrono::seconds(30)),
            std::future_status::ready)
      << relay.err();
  auto gone = pgtest::AdminQuery("",
                                 "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                                 "application_name = '" +
                                     name + "'");
  killed.set_value();
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_GE(gone->size(), 2u);  // the store connection that claimed, and the LISTEN
  {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60),
                             [&] { return delivered.size() == ids.size(); }))
        << delivered.size() << " of " << ids.size() << " delivered: " << relay.err();
  }
  EXPECT_TRUE(e2e::Eventually([&] {
    for (const std::string& id : ids) {
      if (StateOf(id) != OutboxState::kSent) return false;
    }
    return true;
  })) << relay.err();
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
  SetAnswer(nullptr);
}

TEST_F(RelayHttpOnPostgres, NoListenPollsOnly) {
  Add({{"a", "1"}});
  Background relay(RelayArgs({"--no-listen", "--poll", "50ms"}));
  ASSERT_TRUE(SeenWithin(1, std::chrono::seconds(10))) << relay.err();
  relay.Signal(SIGTERM);
  EXPECT_EQ(relay.Wait(), 0) << relay.err();
  EXPECT_EQ(relay.err().find("LISTEN"), std::string::npos) << relay.err();
}
#endif

TEST_F(RelayHttpOnSqlite, SecondRelayOnOneSqliteStoreExits5WithAClearMessage) {
  Add({{"a", "1"}});
  Background first(RelayArgs({"--poll", "50ms"}));
  WaitForRequests(1);  // the first holds the lock by now
  CallRun second = Idem(RelayArgs({"--once"}));
  EXPECT_EQ(second.exit_code, 5) << second.err;
  EXPECT_NE(second.err.find("another idem relay is running"), std::string::npos) << second.err;
  first.Signal(SIGTERM);
  EXPECT_EQ(first.Wait(), 0) << first.err();
  EXPECT_EQ(Idem(RelayArgs({"--once"})).exit_code, 0);
}

}  // namespace
}  // namespace idem::testing
