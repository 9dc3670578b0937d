// `idem outbox` end to end: the real binary (IDEM_BINARY) on a store filled through the library.
// Compiled once, run on the store IDEM_E2E_STORE names (e2e_store.h): SQLite, or the "postgres"
// CTest fixture's server (a fresh schema per test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "e2e_store.h"
#include "idem/outbox.h"
#include "idem/outbox_admin.h"
#include "idem/store.h"
#include "idem_process.h"
#ifdef IDEM_TEST_WITH_POSTGRES
#include "pg_test_support.h"
#endif

namespace idem::testing {
namespace {

class IdemOutbox : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<E2eStore> on = E2eStoreFromEnvironment();
    ASSERT_TRUE(on.ok()) << on.status();
    on_ = *on;
    ASSERT_NO_FATAL_FAILURE(ChooseUri());
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(uri_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // uri_: a fresh schema on the "postgres" fixture's server, or a file in a fresh folder (dir_).
  void ChooseUri() {
    if (on_ == E2eStore::kPostgres) {
#ifdef IDEM_TEST_WITH_POSTGRES
      absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      uri_ = fresh->uri;
#else
      FAIL() << "IDEM_E2E_STORE=postgres, but this test binary was built without PostgreSQL";
#endif
    } else {
      ASSERT_EQ(on_, E2eStore::kSqlite) << "no outbox on " << E2eStoreName(on_);
      dir_ = std::filesystem::temp_directory_path() /
             ("idem-outbox-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
      std::filesystem::remove_all(dir_);
      std::filesystem::create_directories(dir_);
      uri_ = "sqlite:" + (dir_ / "outbox.db").string();
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Adds a message in a committed transaction; returns its id.
  std::string Add(const std::string& aggregate, const std::string& payload = "{\"n\":1}") {
    return AddMany({aggregate}, payload)[0];
  }

  // Adds one message per aggregate in `aggregates`, in one committed transaction; returns ids.
  std::vector<std::string> AddMany(const std::vector<std::string>& aggregates,
                                   const std::string& payload = "{\"n\":1}") {
    std::vector<std::string> ids;
    auto tx = store_->Begin();
    EXPECT_TRUE(tx.ok()) << tx.status();
    for (const std::string& aggregate : aggregates) {
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

  void Kill(const std::string& id) {
    auto tx = store_->Begin();
    ASSERT_TRUE(tx.ok());
    const SqlValue params[] = {id};
    ASSERT_TRUE((*tx)
                    ->Execute("UPDATE idem_outbox SET state = 'dead', attempts = 8, "
                              "last_error = 'HTTP 500 from the endpoint' WHERE id = $1",
                              params)
                    .ok());
    ASSERT_TRUE((*tx)->Commit().ok());
  }

  CallRun Outbox(std::vector<std::string> args) {
    args.insert(args.begin(), "outbox");
    args.insert(args.begin() + 2, {"--store", uri_});
    return Idem(args);
  }

  std::vector<std::string> IdsListed(std::vector<std::string> args) {
    args.insert(args.begin(), {"list", "--format", "json"});
    CallRun r = Outbox(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> ids;
    const boost::json::value parsed = boost::json::parse(r.out);
    for (const auto& v : parsed.as_array()) {
      ids.push_back(std::string(v.at("id").as_string()));
    }
    return ids;
  }

  E2eStore on_ = E2eStore::kSqlite;
  std::filesystem::path dir_;
  std::string uri_;
  std::unique_ptr<Store> store_;
};

TEST_F(IdemOutbox, ListFiltersByStateAggregateAndTopicAsJson) {
  const std::string a = Add("a");
  const std::string b = Add("b");
  Kill(b);
  EXPECT_EQ(IdsListed({}), (std::vector{a, b}));
  EXPECT_EQ(IdsListed({"--state", "dead"}), (std::vector{b}));
  EXPECT_EQ(IdsListed({"--aggregate", "a"}), (std::vector{a}));
  EXPECT_EQ(IdsListed({"--topic", "other"}), std::vector<std::string>{});
  EXPECT_EQ(IdsListed({"--limit", "1"}), (std::vector{a}));
  CallRun r = Outbox({"list", "--format", "json", "--state", "dead"});
  const boost::json::value listed = boost::json::parse(r.out);
  const auto dead = listed.as_array()[0];
  EXPECT_EQ(dead.at("state").as_string(), "dead");
  EXPECT_EQ(dead.at("attempts").as_int64(), 8);
  EXPECT_EQ(dead.at("last_error").as_string(), "HTTP 500 from the endpoint");
  EXPECT_FALSE(dead.as_object().contains("payload"));
}

TEST_F(IdemOutbox, ListWithLimitZeroPagesThroughEverything) {
  std::vector<std::string> aggregates;
  for (int i = 0; i < 1005; ++i) aggregates.push_back("agg-" + std::to_string(i % 7));
  EXPECT_EQ(IdsListed({"--limit", "0"}), AddMany(aggregates));
}

TEST_F(IdemOutbox, ListAsTextHasAHeaderAndOneLinePerMessage) {
  Add("a");
  Kill(Add("b"));
  CallRun r = Outbox({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("SEQ"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("HTTP 500 from the endpoint"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3);
}

TEST_F(IdemOutbox, ShowPrintsTheMessageWithItsPayload) {
  const std::string id = Add("a", "{\"amount\":42}");
  CallRun text = Outbox({"show", id});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("state:        pending"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("x-tenant: acme"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("{\"amount\":42}"), std::string::npos) << text.out;
  CallRun json = Outbox({"show", id, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto v = boost::json::parse(json.out);
  EXPECT_EQ(v.at("payload").as_string(), "{\"amount\":42}");
  EXPECT_EQ(v.at("aggregate_key").as_string(), "a");
  const std::string binary = Add("a", std::string("\xff\x00\x01", 3));
  CallRun b = Outbox({"show", binary, "--format", "json"});
  EXPECT_EQ(boost::json::parse(b.out).at("payload_base64").as_string(), "/wAB");
}

TEST_F(IdemOutbox, ShowOfAnUnknownIdExits1AndOfAMalformedId2) {
  CallRun unknown = Outbox({"show", "017f22e2-79b0-7cc3-98c4-dc0c0c07398f"});
  EXPECT_EQ(unknown.exit_code, 1) << unknown.err;
  EXPECT_NE(unknown.err.find("no outbox message"), std::string::npos) << unknown.err;
  CallRun malformed = Outbox({"show", "42"});
  EXPECT_EQ(malformed.exit_code, 2) << malformed.err;
  EXPECT_NE(malformed.err.find("UUID"), std::string::npos) << malformed.err;
}

TEST_F(IdemOutbox, RedriveMakesDeadMessagesPendingAndRefusesOthers) {
  const std::string a = Add("a");
  const std::string b = Add("b");
  Kill(a);
  Kill(b);
  CallRun one = Outbox({"redrive", a});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, "re-drove 1 dead message\n");
  EXPECT_EQ(GetOutboxMessage(*store_, a)->state, OutboxState::kPending);
  EXPECT_EQ(GetOutboxMessage(*store_, a)->attempts, 0);
  CallRun again = Outbox({"redrive", a});
  EXPECT_EQ(again.exit_code, 4) << again.err;
  EXPECT_NE(again.err.find("not dead"), std::string::npos) << again.err;
  CallRun all = Outbox({"redrive", "--all-dead"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "re-drove 1 dead message\n");
  EXPECT_EQ(IdsListed({"--state", "dead"}), std::vector<std::string>{});
}

TEST_F(IdemOutbox, PurgeDeletesButRefusesPendingMessagesWithoutForce) {
  const std::string a = Add("a");
  const std::string b = Add("b");
  Kill(b);
  CallRun pending = Outbox({"purge", a});
  EXPECT_EQ(pending.exit_code, 4) << pending.err;
  EXPECT_NE(pending.err.find("--force"), std::string::npos) << pending.err;
  CallRun dead = Outbox({"purge", "--state", "dead"});
  ASSERT_EQ(dead.exit_code, 0) << dead.err;
  EXPECT_EQ(dead.out, "purged 1 message\n");
  EXPECT_EQ(Outbox({"purge", "--state", "pending"}).exit_code, 4);
  EXPECT_EQ(Outbox({"purge", a, "--force"}).exit_code, 0);
  EXPECT_EQ(IdsListed({}), std::vector<std::string>{});
  EXPECT_EQ(Outbox({"purge", a}).exit_code, 1);
}

TEST_F(IdemOutbox, BadInputIsAUsageErrorThatNamesTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"list", "--state", "done"}, "pending, sent or dead"},
      {{"list", "--format", "yaml"}, "text or json"},
      {{"list", "--limit", "-1"}, "--limit"},
      {{"show", "not-a-uuid"}, "UUID"},
      {{"redrive"}, "--all-dead"},
      {{"redrive", "017f22e2-79b0-7cc3-98c4-dc0c0c07398f", "--all-dead"}, "--all-dead"},
      {{"purge"}, "--state"},
      {{"purge", "--state", "gone"}, "pending, sent or dead"},
      {{"list", "--lock-timeout", "soon"}, "--lock-timeout"},
  };
  for (const Case& c : cases) {
    CallRun r = Outbox(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

// Tests of SQLite only, run by its registration alone.
using IdemOutboxOnSqlite = OnlyOn<IdemOutbox, E2eStore::kSqlite>;

TEST_F(IdemOutboxOnSqlite, MissingSqliteFileIsAUsageErrorAndNotCreated) {
  const std::string missing = (dir_ / "nope.db").string();
  CallRun r = Idem({"outbox", "list", "--store", "sqlite:" + missing});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(missing));
}

}  // namespace
}  // namespace idem::testing
