// `idem relay --sink http` end to end: the real binary publishing a store's outbox (filled
// through the library) to a real HTTP receiver (ScriptedServer), checking Standard Webhooks
// signatures, ids and order per aggregate. Compiled twice: on SQLite, and with
// IDEM_RELAY_TEST_POSTGRES on the "postgres" CTest fixture's server (a fresh schema per test).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "http/test_server.h"
#include "idem/outbox.h"
#include "idem/outbox_admin.h"
#include "idem/store.h"
#include "idem/webhook_signature.h"
#include "idem_process.h"
#include "relay_process.h"
#ifdef IDEM_RELAY_TEST_POSTGRES
#include "pg_test_support.h"
#define RelayHttp RelayHttpPostgres
#endif

namespace idem::testing {
namespace {

using http::testing::ScriptedReply;
using http::testing::SeenRequest;

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

std::string Header(const SeenRequest& r, const std::string& name) {
  for (const auto& [n, v] : r.headers) {
    if (strcasecmp(n.c_str(), name.c_str()) == 0) return v;
  }
  return "";
}

class RelayHttp : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef IDEM_RELAY_TEST_POSTGRES
    auto fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    uri_ = fresh->uri;
#else
    dir_ = std::filesystem::temp_directory_path() /
           ("idem-relay-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    uri_ = "sqlite:" + (dir_ / "outbox.db").string();
#endif
    auto store = OpenStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    server_ = std::make_unique<http::testing::ScriptedServer>([this](const SeenRequest& r) {
      std::unique_lock<std::mutex> lock(mu_);
      ++seen_;
      cv_.notify_all();
      return answer_ ? answer_(r) : ScriptedReply{http::testing::Ok("{}")};
    });
  }
  void TearDown() override {
    server_.reset();
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Adds (aggregate, payload) messages in one committed transaction; returns their ids.
  std::vector<std::string> Add(const std::vector<std::pair<std::string, std::string>>& messages) {
    std::vector<std::string> ids;
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok()) << tx.status();
    for (const auto& [aggregate, payload] : messages) {
      auto id = AddOutboxMessage(**tx, {.topic = "order.created",
                                        .aggregate_key = aggregate,
                                        .headers = {{"x-tenant", "acme"}},
                                        .payload = payload});
      EXPECT_TRUE(id.ok()) << id.status();
      ids.push_back(id.ok() ? *id : "");
    }
    EXPECT_TRUE((*tx)->Commit().ok());
    return ids;
  }

  std::vector<std::string> RelayArgs(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"relay",
                                     "--store",
                                     uri_,
                                     "--sink",
                                     "http",
                                     "--url",
                                     server_->Url("/hooks"),
                                     "--secret",
                                     kSecret,
                                     "--backoff-base",
                                     "0s"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  void SetAnswer(std::function<ScriptedReply(const SeenRequest&)> answer) {
    std::lock_guard<std::mutex> lock(mu_);
    answer_ = std::move(answer);
  }
  void WaitForRequests(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60), [&] { return seen_ >= n; }));
  }

  OutboxState StateOf(const std::string& id) {
    auto m = GetOutboxMessage(*store_, id);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? m->state : OutboxState::kPending;
  }

  std::filesystem::path dir_;
  std::string uri_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<http::testing::ScriptedServer> server_;
  std::mutex mu_;
  std::condition_variable cv_;
  int seen_ = 0;
  std::function<ScriptedReply(const SeenRequest&)> answer_;
};

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

#ifndef IDEM_RELAY_TEST_POSTGRES
TEST_F(RelayHttp, SecondRelayOnOneSqliteStoreExits5WithAClearMessage) {
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
#endif

}  // namespace
}  // namespace idem::testing
