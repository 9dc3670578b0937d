// `idem relay --sink nats` end to end: the real binary publishing a SQLite outbox to a real
// nats-server with JetStream (the "nats" CTest fixture, scripts/nats-fixture.sh), read back from
// the stream with libnats: subjects, Nats-Msg-Id, headers, payloads, order per aggregate,
// duplicates dropped, a payload over max_payload dead after its attempts.
#include <gtest/gtest.h>
#include <nats/nats.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "e2e_support.h"
#include "idem_process.h"
#include "nats_test_support.h"
#include "relay_fixture.h"

namespace idem::testing {
namespace {

struct StreamMessage {
  std::string subject, id, tenant, data;
};

class RelayNats : public RelayE2e {
 protected:
  void SetUp() override {
    RelayE2e::SetUp();
    if (HasFatalFailure()) return;
    auto url = natstest::ServerUrls(natstest::Fixture::kSingle);
    ASSERT_TRUE(url.ok()) << url.status();
    url_ = *url;
    auto connected = natstest::Connect(url_);
    ASSERT_TRUE(connected.ok()) << connected.status();
    nats_ = std::move(*connected);
    conn_ = nats_->connection();
    js_ = nats_->js();
    stream_ = natstest::FreshBucket("RELAYTEST");
    prefix_ = "relaytest" + stream_.substr(stream_.find('_'));
    AddStream(js_);
  }

  // Makes the test's stream (capturing "<prefix_>.>", in memory) on the server of `js`.
  void AddStream(jsCtx* js) {
    const std::string subjects = prefix_ + ".>";
    jsStreamConfig config;
    jsStreamConfig_Init(&config);
    config.Name = stream_.c_str();
    const char* list[] = {subjects.c_str()};
    config.Subjects = list;
    config.SubjectsLen = 1;
    config.Storage = js_MemoryStorage;
    jsStreamInfo* info = nullptr;
    ASSERT_EQ(js_AddStream(&info, js, &config, nullptr, nullptr), NATS_OK);
    jsStreamInfo_Destroy(info);
  }
  void TearDown() override {
    if (js_ != nullptr) js_DeleteStream(js_, stream_.c_str(), nullptr, nullptr);
    nats_.reset();
    RelayE2e::TearDown();
  }

  std::vector<std::string> NatsArgs(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"relay", "--store",          uri_,   "--sink", "nats", "--url",
                                     url_,    "--subject-prefix", prefix_};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Every message of the test's stream on the server of `js` (default: the fixture's), in order.
  std::vector<StreamMessage> Stream(jsCtx* js = nullptr) {
    if (js == nullptr) js = js_;
    std::vector<StreamMessage> out;
    jsStreamInfo* info = nullptr;
    EXPECT_EQ(js_GetStreamInfo(&info, js, stream_.c_str(), nullptr, nullptr), NATS_OK);
    const uint64_t last = info != nullptr ? info->State.LastSeq : 0;
    jsStreamInfo_Destroy(info);
    for (uint64_t seq = 1; seq <= last; ++seq) {
      natsMsg* msg = nullptr;
      if (js_GetMsg(&msg, js, stream_.c_str(), seq, nullptr, nullptr) != NATS_OK) continue;
      StreamMessage m{.subject = natsMsg_GetSubject(msg),
                      .data = std::string(natsMsg_GetData(msg), natsMsg_GetDataLength(msg))};
      const char* value = nullptr;
      if (natsMsgHeader_Get(msg, "Nats-Msg-Id", &value) == NATS_OK) m.id = value;
      if (natsMsgHeader_Get(msg, "x-tenant", &value) == NATS_OK) m.tenant = value;
      natsMsg_Destroy(msg);
      out.push_back(std::move(m));
    }
    return out;
  }

  std::string url_, stream_, prefix_;
  std::unique_ptr<natstest::JetStream> nats_;
  natsConnection* conn_ = nullptr;
  jsCtx* js_ = nullptr;
};

TEST_F(RelayNats, PublishesEveryMessageUnderItsIdInOrderPerAggregate) {
  std::vector<std::pair<std::string, std::string>> messages;
  for (int i = 0; i < 12; ++i) {
    messages.push_back({"agg-" + std::to_string(i % 3), "{\"n\":" + std::to_string(i) + "}"});
  }
  const std::vector<std::string> ids = Add(messages);
  CallRun run = Idem(NatsArgs({"--once", "--batch", "5", "--backoff-base", "0s"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<StreamMessage> stream = Stream();
  ASSERT_EQ(stream.size(), ids.size());
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < ids.size(); ++i) index[ids[i]] = i;
  std::map<std::string, std::vector<std::string>> per_aggregate;
  for (const StreamMessage& m : stream) {
    ASSERT_TRUE(index.contains(m.id)) << m.id;
    EXPECT_EQ(m.subject, prefix_ + ".order.created");
    EXPECT_EQ(m.tenant, "acme");
    EXPECT_EQ(m.data, messages[index[m.id]].second);
    per_aggregate[messages[index[m.id]].first].push_back(m.id);
  }
  for (const auto& [aggregate, got] : per_aggregate) {
    std::vector<std::string> expected;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (messages[i].first == aggregate) expected.push_back(ids[i]);
    }
    EXPECT_EQ(got, expected) << aggregate;
  }
  for (const std::string& id : ids) EXPECT_EQ(StateOf(id), OutboxState::kSent);
  ASSERT_EQ(Idem(NatsArgs({"--once"})).exit_code, 0);
  EXPECT_EQ(Stream().size(), ids.size());  // nothing is published twice
}

TEST_F(RelayNats, DuplicateAcknowledgementCountsAsSent) {
  const std::vector<std::string> ids = Add({{"a", "first"}, {"a", "second"}});
  // A relay that published the first message and died before recording it.
  jsPubOptions options;
  jsPubOptions_Init(&options);
  options.MsgId = ids[0].c_str();
  jsPubAck* ack = nullptr;
  const std::string subject = prefix_ + ".order.created";
  ASSERT_EQ(js_Publish(&ack, js_, subject.c_str(), "first", 5, &options, nullptr), NATS_OK);
  jsPubAck_Destroy(ack);
  CallRun run = Idem(NatsArgs({"--once"}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::vector<StreamMessage> stream = Stream();
  ASSERT_EQ(stream.size(), 2u);  // the stream's duplicate window dropped the redelivery
  EXPECT_EQ(stream[0].id, ids[0]);
  EXPECT_EQ(stream[1].id, ids[1]);
  EXPECT_EQ(StateOf(ids[0]), OutboxState::kSent);
  EXPECT_EQ(StateOf(ids[1]), OutboxState::kSent);
}

// On the "nats_small_payload" fixture's server (max_payload 64 KiB).
TEST_F(RelayNats, PayloadOverMaxPayloadEndsDeadAfterItsAttemptsWithTheReason) {
  std::ifstream url_file(IDEM_NATS_SMALL_FIXTURE_URL);
  std::string small_url;
  std::getline(url_file, small_url);
  auto small = natstest::Connect(small_url);
  ASSERT_TRUE(small.ok()) << small.status() << " (" << IDEM_NATS_SMALL_FIXTURE_URL << ")";
  ASSERT_EQ(natsConnection_GetMaxPayload((*small)->connection()), 64 * 1024);
  AddStream((*small)->js());
  const std::vector<std::string> ids = Add({{"a", std::string(100 * 1024, 'x')}, {"b", "fine"}});
  std::vector<std::string> args =
      NatsArgs({"--once", "--max-attempts", "2", "--backoff-base", "0s"});
  args[6] = small_url;  // the --url value
  CallRun run = Idem(args);
  const std::vector<StreamMessage> stream = Stream((*small)->js());
  js_DeleteStream((*small)->js(), stream_.c_str(), nullptr, nullptr);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto big = GetOutboxMessage(*store_, ids[0]);
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_EQ(big->state, OutboxState::kDead);
  EXPECT_EQ(big->attempts, 2);
  EXPECT_NE(big->last_error.find("over the NATS server's max_payload of 65536 bytes"),
            std::string::npos)
      << big->last_error;
  EXPECT_EQ(StateOf(ids[1]), OutboxState::kSent);
  ASSERT_EQ(stream.size(), 1u);
  EXPECT_EQ(stream[0].id, ids[1]);
  CallRun listed = Idem({"outbox", "list", "--store", uri_, "--state", "dead"});
  EXPECT_NE(listed.out.find(ids[0]), std::string::npos) << listed.out;
}

TEST_F(RelayNats, SubjectNoStreamCapturesIsRetriedNotLost) {
  const std::vector<std::string> ids = Add({{"a", "1"}});
  std::vector<std::string> args =
      NatsArgs({"--once", "--timeout", "2s", "--backoff-base", "1h", "--backoff-cap", "2h"});
  args[8] = "nostream" + std::to_string(::getpid());  // the --subject-prefix value
  CallRun run = Idem(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto m = GetOutboxMessage(*store_, ids[0]);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->state, OutboxState::kPending);
  EXPECT_EQ(m->attempts, 1);
  EXPECT_FALSE(m->last_error.empty());
  std::printf("last_error: %s\n", m->last_error.c_str());
}

TEST_F(RelayNats, UnreachableServerIsRetriedNotLost) {
  const std::vector<std::string> ids = Add({{"a", "1"}});
  std::vector<std::string> args =
      NatsArgs({"--once", "--timeout", "1s", "--backoff-base", "1h", "--backoff-cap", "2h"});
  args[6] = "nats://127.0.0.1:" + std::to_string(e2e::FreePort());  // the --url value
  CallRun run = Idem(args);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto m = GetOutboxMessage(*store_, ids[0]);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->state, OutboxState::kPending);
  EXPECT_EQ(m->attempts, 1);
  EXPECT_NE(m->last_error.find("not connected"), std::string::npos) << m->last_error;
}

// --url with a list of servers, as the key store's URI takes it ("nats://HOST:PORT,HOST:PORT"):
// one server of the list is down, the other is the fixture's. The relay connects to the one that
// answers and publishes (it used to take the list as one URL and never connect).
TEST_F(RelayNats, ServerListInUrlConnectsToAServerThatAnswers) {
  const std::string live = url_.substr(std::string("nats://").size());
  const std::string down = "127.0.0.1:" + std::to_string(e2e::FreePort());
  int n = 0;
  for (const std::string& list :
       {"nats://" + down + "," + live, "nats://" + live + ",nats://" + down}) {
    SCOPED_TRACE(list);
    const std::vector<std::string> ids = Add({{"a", std::to_string(++n)}});
    std::vector<std::string> args =
        NatsArgs({"--once", "--timeout", "2s", "--backoff-base", "1h", "--backoff-cap", "2h"});
    args[6] = list;  // the --url value
    CallRun run = Idem(args);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    auto m = GetOutboxMessage(*store_, ids[0]);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->state, OutboxState::kSent) << m->last_error;
    EXPECT_EQ(Stream().size(), static_cast<size_t>(n));
  }
}

TEST_F(RelayNats, BadFlagsAreUsageErrors) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"--sink", "nats", "--subject-prefix", "p"}, "--url"},
      {{"--sink", "nats", "--url", url_}, "--subject-prefix"},
      {{"--sink", "nats", "--url", "http://127.0.0.1:4222", "--subject-prefix", "p"}, "nats://"},
      {{"--sink", "nats", "--url", url_ + ",", "--subject-prefix", "p"}, "nats://"},
      {{"--sink", "nats", "--url", url_ + ",127.0.0.1:x", "--subject-prefix", "p"}, "nats://"},
      {{"--sink", "nats", "--url", url_ + "?bucket=b", "--subject-prefix", "p"}, "nats://"},
      {{"--sink", "nats", "--url", url_, "--subject-prefix", "p.*"}, "--subject-prefix"},
      {{"--sink", "nats", "--url", url_, "--subject-prefix", "p", "--max-in-flight", "0"},
       "outstanding"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"relay", "--store", uri_, "--once"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    CallRun r = Idem(args);
    EXPECT_EQ(r.exit_code, 2) << c.says << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace idem::testing
