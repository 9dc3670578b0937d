// `idem keys` end to end: the real binary (IDEM_BINARY) on a store filled through the library.
// Compiled once, run on the store IDEM_E2E_STORE names (e2e_store.h): SQLite, the "postgres"
// CTest fixture's server (a fresh schema per test) or the "nats" fixture's JetStream (a fresh
// bucket per test).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json/parse.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "e2e_store.h"
#include "idem/store.h"
#include "idem_process.h"
#ifdef IDEM_TEST_WITH_POSTGRES
#include "pg_test_support.h"
#endif
#ifdef IDEM_TEST_WITH_NATS
#include "nats_test_support.h"
#endif

namespace idem::testing {
namespace {

using namespace std::chrono_literals;

constexpr char kFingerprint[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

class IdemKeys : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<E2eStore> on = E2eStoreFromEnvironment();
    ASSERT_TRUE(on.ok()) << on.status();
    on_ = *on;
    ASSERT_NO_FATAL_FAILURE(ChooseUri());
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(uri_, {.clock = &clock_});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
  }

  // uri_: a fresh schema on the "postgres" fixture's server, a fresh bucket on the "nats"
  // fixture's JetStream, or a file in a fresh folder (dir_).
  void ChooseUri() {
    if (on_ == E2eStore::kPostgres) {
#ifdef IDEM_TEST_WITH_POSTGRES
      absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      uri_ = fresh->uri;
#else
      FAIL() << "IDEM_E2E_STORE=postgres, but this test binary was built without PostgreSQL";
#endif
    } else if (on_ == E2eStore::kNats) {
#ifdef IDEM_TEST_WITH_NATS
      absl::StatusOr<std::string> uri = natstest::StoreUri(
          natstest::Fixture::kSingle, "replicas=1&bucket=" + natstest::FreshBucket("keys"));
      ASSERT_TRUE(uri.ok()) << uri.status();
      uri_ = *uri;
#else
      FAIL() << "IDEM_E2E_STORE=nats, but this test binary was built without NATS";
#endif
    } else {
      dir_ = std::filesystem::temp_directory_path() /
             ("idem-keys-test-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name());
      std::filesystem::remove_all(dir_);
      std::filesystem::create_directories(dir_);
      uri_ = "sqlite:" + (dir_ / "keys.db").string();
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Claims (tenant, key) created `age` ago and, unless in_progress, records `status`.
  void Put(const std::string& tenant, const std::string& key, KeyState state, Millis age,
           int status = 201) {
    clock_.Set(SystemClock().NowMillis() - age.count());
    absl::StatusOr<ClaimResult> c = store_->Claim({{tenant, key}, kFingerprint, "worker-7", 1h});
    ASSERT_TRUE(c.ok() && c->claimed) << c.status();
    const StoredResponse res{status, {{"Content-Type", "application/json"}}, "{\"id\":7}"};
    if (state == KeyState::kCompleted) {
      ASSERT_TRUE(store_->Complete(c->record.scope, c->record.fence, res).ok());
    } else if (state == KeyState::kFailedFinal) {
      ASSERT_TRUE(store_->FailFinal(c->record.scope, c->record.fence, res).ok());
    }
  }

  CallRun Keys(std::vector<std::string> args) {
    args.insert(args.begin(), "keys");
    args.insert(args.begin() + 2, {"--store", uri_});
    return Idem(args);
  }

  E2eStore on_ = E2eStore::kSqlite;
  ManualClock clock_;
  std::filesystem::path dir_;
  std::string uri_;
  std::unique_ptr<Store> store_;
};

std::vector<std::string> KeysOf(const std::string& json) {
  std::vector<std::string> keys;
  const boost::json::value parsed = boost::json::parse(json);
  for (const auto& v : parsed.as_array()) {
    keys.push_back(std::string(v.at("tenant").as_string()) + "/" +
                   std::string(v.at("key").as_string()));
  }
  return keys;
}

TEST_F(IdemKeys, ListFiltersByTenantStateAndAgeAsJson) {
  Put("acme", "order-1", KeyState::kCompleted, 2h);
  Put("acme", "order-2", KeyState::kInProgress, 1min);
  Put("globex", "order-1", KeyState::kFailedFinal, 30min, 409);
  CallRun all = Keys({"list", "--format", "json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(KeysOf(all.out),
            (std::vector<std::string>{"acme/order-1", "acme/order-2", "globex/order-1"}));
  EXPECT_EQ(KeysOf(Keys({"list", "--format", "json", "--tenant", "acme"}).out),
            (std::vector<std::string>{"acme/order-1", "acme/order-2"}));
  EXPECT_EQ(KeysOf(Keys({"list", "--format", "json", "--state", "in_progress"}).out),
            (std::vector<std::string>{"acme/order-2"}));
  EXPECT_EQ(KeysOf(Keys({"list", "--format", "json", "--older-than", "10m"}).out),
            (std::vector<std::string>{"acme/order-1", "globex/order-1"}));
  EXPECT_EQ(KeysOf(Keys({"list", "--format", "json", "--newer-than", "1h"}).out),
            (std::vector<std::string>{"acme/order-2", "globex/order-1"}));
  EXPECT_EQ(KeysOf(Keys({"list", "--format", "json", "--limit", "1"}).out),
            (std::vector<std::string>{"acme/order-1"}));
  const auto first = boost::json::parse(all.out).as_array()[0];
  EXPECT_EQ(first.at("state").as_string(), "completed");
  EXPECT_EQ(first.at("fingerprint").as_string(), kFingerprint);
}

TEST_F(IdemKeys, ListAsTextHasAHeaderAndOneLinePerRecord) {
  Put("acme", "order-1", KeyState::kCompleted, 2h);
  Put("", "global-key", KeyState::kInProgress, 1min);
  CallRun r = Keys({"list"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("TENANT", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("global-key"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("completed"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 3);
  // Ages as a person reads them: "2h", never "7200312ms".
  const size_t order = r.out.find("order-1");
  ASSERT_NE(order, std::string::npos) << r.out;
  const std::string row = r.out.substr(order, r.out.find('\n', order) - order);
  EXPECT_NE(row.find(" 2h "), std::string::npos) << row;
  EXPECT_EQ(row.find("ms"), std::string::npos) << row;
}

TEST_F(IdemKeys, ShowPrintsTheRecordAndItsStoredResponse) {
  Put("acme", "order-1", KeyState::kCompleted, 2h);
  CallRun text = Keys({"show", "--tenant", "acme", "order-1"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("state:       completed"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Content-Type: application/json"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("{\"id\":7}"), std::string::npos) << text.out;
  CallRun json = Keys({"show", "--tenant", "acme", "order-1", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto v = boost::json::parse(json.out);
  EXPECT_EQ(v.at("response").at("status").as_int64(), 201);
  EXPECT_EQ(v.at("response").at("body").as_string(), "{\"id\":7}");
  CallRun absent = Keys({"show", "--tenant", "other", "order-1"});
  EXPECT_EQ(absent.exit_code, 1) << absent.err;
  EXPECT_NE(absent.err.find("no live record"), std::string::npos) << absent.err;
}

// Issue 37, item 11: an in_progress claim of a route with `recover` keeps the request as its note
// (docs/gateway.md); show prints its method, path, header names and sizes, and never a credential,
// a withheld header's value, the query or the body.
TEST_F(IdemKeys, ShowPrintsAClaimsNoteWithoutItsCredentialsQueryOrBody) {
  const std::string secret = "Bearer sk_live_note_4711";
  // The note in its stored form (src/gateway/recovery_note.h, persisted).
  const StoredResponse note{1,
                            {{":idem-note", "1"},
                             {":method", "POST"},
                             {":target", "/charges?token=q-secret-0815"},
                             {":attempts", "2"},
                             {"Content-Type", "application/json"},
                             {"Authorization", secret},
                             {"Cookie", "session=c-secret-0816"},
                             {"X-Api-Key", "k-secret-0817"}},
                            "{\"card\":\"b-secret-0818\"}"};
  clock_.Set(SystemClock().NowMillis());
  LeaseWrite claim{.kind = LeaseWrite::Kind::kClaim,
                   .scope = {"acme", "order-n"},
                   .fingerprint = kFingerprint,
                   .owner = "gw/req-1",
                   .lease = 1h,
                   .response = note};
  absl::StatusOr<std::vector<LeaseWriteResult>> wrote = store_->ApplyLeaseBatch({&claim, 1});
  ASSERT_TRUE(wrote.ok() && (*wrote)[0].claimed) << wrote.status();
  CallRun text = Keys({"show", "--tenant", "acme", "order-n"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("state:       in_progress"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("(2 recovery attempts so far)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("request:     POST /charges (query of 19 bytes withheld)\n"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("Content-Type: application/json\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Authorization: (24 bytes withheld)\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("X-Api-Key: (13 bytes withheld)\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("body:        24 bytes (withheld)\n"), std::string::npos) << text.out;
  CallRun json = Keys({"show", "--tenant", "acme", "order-n", "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const boost::json::value v = boost::json::parse(json.out);
  const boost::json::value& n = v.at("note");
  EXPECT_EQ(n.at("method").as_string(), "POST");
  EXPECT_EQ(n.at("path").as_string(), "/charges");
  EXPECT_EQ(n.at("query_bytes").as_int64(), 19);
  EXPECT_EQ(n.at("attempts").as_int64(), 2);
  EXPECT_EQ(n.at("body_bytes").as_int64(), 24);
  const boost::json::array& headers = n.at("headers").as_array();
  ASSERT_EQ(headers.size(), 4u) << json.out;
  EXPECT_EQ(headers[0].as_array()[1].as_string(), "application/json");
  for (size_t i = 1; i < headers.size(); ++i)
    EXPECT_TRUE(headers[i].as_array()[1].is_null()) << json.out;
  for (const std::string& out : {text.out, json.out}) {
    for (const char* withheld :
         {"sk_live_note_4711", "q-secret-0815", "c-secret-0816", "k-secret-0817", "b-secret-0818"})
      EXPECT_EQ(out.find(withheld), std::string::npos) << withheld << " printed:\n" << out;
  }
}

TEST_F(IdemKeys, PurgeDeletesButRefusesAKeyInFlightWithoutForce) {
  Put("acme", "done", KeyState::kCompleted, 2h);
  Put("acme", "busy", KeyState::kInProgress, 1min);
  CallRun done = Keys({"purge", "--tenant", "acme", "done"});
  EXPECT_EQ(done.exit_code, 0) << done.err;
  CallRun busy = Keys({"purge", "--tenant", "acme", "busy"});
  EXPECT_EQ(busy.exit_code, 4) << busy.err;
  EXPECT_NE(busy.err.find("--force"), std::string::npos) << busy.err;
  EXPECT_EQ(KeysOf(Keys({"list", "--format", "json"}).out),
            (std::vector<std::string>{"acme/busy"}));
  EXPECT_EQ(Keys({"purge", "--tenant", "acme", "--force", "busy"}).exit_code, 0);
  EXPECT_EQ(Keys({"list", "--format", "json"}).out, "[]\n");
  EXPECT_EQ(Keys({"purge", "--tenant", "acme", "busy"}).exit_code, 1);
}

TEST_F(IdemKeys, SweepDeletesOnlyExpiredRecords) {
  Put("acme", "old", KeyState::kCompleted, 25h);
  Put("acme", "new", KeyState::kCompleted, 1h);
  CallRun expired = Keys({"list", "--format", "json", "--include-expired"});
  EXPECT_EQ(KeysOf(expired.out), (std::vector<std::string>{"acme/new", "acme/old"}));
  CallRun r = Keys({"sweep", "--batch", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "swept 1 expired record\n");
  EXPECT_EQ(KeysOf(Keys({"list", "--format", "json", "--include-expired"}).out),
            (std::vector<std::string>{"acme/new"}));
}

TEST_F(IdemKeys, BadInputIsAUsageErrorThatNamesTheProblem) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"list", "--state", "done"}, "in_progress, completed or failed_final"},
      {{"list", "--older-than", "5x"}, "--older-than"},
      {{"list", "--format", "yaml"}, "text or json"},
      {{"list", "--limit", "-1"}, "--limit"},
      {{"show", "has space"}, "key"},
      {{"sweep", "--batch", "0"}, "--batch"},
      {{"sweep", "--lock-timeout", "soon"}, "--lock-timeout"},
  };
  for (const Case& c : cases) {
    CallRun r = Keys(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
}

// Tests of one store only, run by that store's registration alone.
using IdemKeysOnSqlite = OnlyOn<IdemKeys, E2eStore::kSqlite>;
using IdemKeysOnPostgres = OnlyOn<IdemKeys, E2eStore::kPostgres>;
using IdemKeysOnNats = OnlyOn<IdemKeys, E2eStore::kNats>;

TEST_F(IdemKeysOnNats, UnreachableServersExit3) {
  CallRun r = Idem({"keys", "list", "--store", "nats://127.0.0.1:1?replicas=1"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

TEST_F(IdemKeysOnPostgres, UnreachableServerExits3) {
  CallRun r = Idem({"keys", "list", "--store", "postgresql://idem@127.0.0.1:1/idem"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
}

TEST_F(IdemKeysOnSqlite, LockedStoreIsWaitedForUpToLockTimeoutAndTheFlagIsNamed) {
  Put("acme", "old", KeyState::kCompleted, 25h);
  absl::StatusOr<std::unique_ptr<StoreTransaction>> held = store_->Begin();  // the write lock
  ASSERT_TRUE(held.ok()) << held.status();
  CallRun r = Keys({"sweep", "--lock-timeout", "300ms"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("--lock-timeout"), std::string::npos) << r.err;
  EXPECT_GE(r.took, 300ms);
  ASSERT_TRUE((*held)->Rollback().ok());
  // Once the lock is gone the same command goes through.
  CallRun after = Keys({"sweep", "--lock-timeout", "300ms"});
  EXPECT_EQ(after.exit_code, 0) << after.err;
  EXPECT_EQ(after.out, "swept 1 expired record\n");
}

TEST_F(IdemKeysOnSqlite, MissingStoreFileIsAUsageErrorAndIsNotCreated) {
  const std::string path = (dir_ / "typo.db").string();
  CallRun r = Idem({"keys", "list", "--store", "sqlite:" + path});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path));
  CallRun bad = Idem({"keys", "list", "--store", "mysql://x"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
}

}  // namespace
}  // namespace idem::testing
