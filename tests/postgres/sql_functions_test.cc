// The SQL functions of schema idem (migration 8, docs/sql.md) on a real server, from plain libpq
// sessions as a program in any language opens them: in-transaction claims (idem.begin /
// idem.finish) raced from many connections, rolled back, replayed and refused; bad input; and
// the records they write, which are ordinary idem records the C++ store reads, sweeps and shares
// fences with. Lease mode and the SIGKILL storm: sql_lease_test.cc, sql_kill_storm_test.cc.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "idem/store.h"
#include "pg_test_support.h"
#include "sql_functions_fixture.h"
#include "sql_session.h"

namespace idem::pgtest {
namespace {

constexpr const char* kBegin =
    "SELECT decision, status, headers::text, convert_from(body, 'UTF8') FROM idem.begin($1, $2)";
constexpr const char* kFinish = "SELECT idem.finish($1, $2::int, $3::jsonb, convert_to($4, 'UTF8'))";

using SqlFunctionsTest = SqlFunctionsFixture;

// One connection claims a key and holds its transaction open; kWaiters others begin the same
// key meanwhile. Each must wait (the server shows them blocked by the holder), and once the
// holder commits its outcome, every one replays it: one effect, one answer.
TEST_F(SqlFunctionsTest, ConcurrentBeginsWaitForTheClaimAndReplayItsCommittedOutcome) {
  constexpr int kWaiters = 8;
  auto holder = Connect();
  ASSERT_TRUE(holder->Exec("BEGIN").ok());
  SqlAnswer first = holder->Exec(kBegin, {"order-1", "fp-1"});
  ASSERT_TRUE(first.ok()) << first.message;
  ASSERT_EQ(first.At(0, 0), "run");

  std::vector<SqlAnswer> answers(kWaiters);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto session = SqlSession::Open(uri_);
      if (session == nullptr) return;  // answers[i] stays empty: reported below
      answers[i] = session->Exec(kBegin, {"order-1", "fp-1"});
    });
  }
  const bool all_waiting = Eventually([&] { return BlockedBy(holder->backend_pid()) == kWaiters; });
  ASSERT_TRUE(holder->Exec("INSERT INTO charges (key, id) VALUES ('order-1', 'ch_1')").ok());
  SqlAnswer finished = holder->Exec(
      kFinish, {"order-1", "201", R"({"Content-Type": "application/json"})", R"({"id":"ch_1"})"});
  ASSERT_TRUE(finished.ok()) << finished.message;
  ASSERT_TRUE(holder->Exec("COMMIT").ok());
  for (std::thread& t : waiters) t.join();
  EXPECT_TRUE(all_waiting) << "the waiters did not all block on the holder's claim";

  for (const SqlAnswer& a : answers) {
    ASSERT_TRUE(a.ok()) << a.sqlstate << " " << a.message;
    EXPECT_EQ(a.At(0, 0), "replay");
    EXPECT_EQ(a.At(0, 1), "201");
    EXPECT_EQ(a.At(0, 2), R"({"Content-Type": "application/json"})");
    EXPECT_EQ(a.At(0, 3), R"({"id":"ch_1"})");
  }
  EXPECT_EQ(Scalar("SELECT count(*) FROM charges"), "1");
}

// The holder rolls back instead: exactly one waiter runs the effect (the others wait for it in
// turn) and every other replays that one's outcome; nothing of the holder's attempt remains.
TEST_F(SqlFunctionsTest, ARolledBackClaimLetsExactlyOneWaiterRunAndTheOthersReplayIt) {
  constexpr int kWaiters = 6;
  auto holder = Connect();
  ASSERT_TRUE(holder->Exec("BEGIN").ok());
  ASSERT_EQ(holder->Exec(kBegin, {"order-2", "fp-2"}).At(0, 0), "run");
  ASSERT_TRUE(holder->Exec("INSERT INTO charges (key, id) VALUES ('order-2', 'ch_lost')").ok());

  std::vector<SqlAnswer> answers(kWaiters);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; ++i) {
    waiters.emplace_back([&, i] {
      auto session = SqlSession::Open(uri_);
      if (session == nullptr || !session->Exec("BEGIN").ok()) return;
      answers[i] = session->Exec(kBegin, {"order-2", "fp-2"});
      if (answers[i].At(0, 0) == "run") {
        const std::string id = "ch_w" + std::to_string(i);
        session->Exec("INSERT INTO charges (key, id) VALUES ('order-2', $1)", {id});
        session->Exec(kFinish, {"order-2", "201", "{}", id});
      }
      session->Exec("COMMIT");
    });
  }
  const bool all_waiting = Eventually([&] { return BlockedBy(holder->backend_pid()) == kWaiters; });
  ASSERT_TRUE(holder->Exec("ROLLBACK").ok());
  for (std::thread& t : waiters) t.join();
  EXPECT_TRUE(all_waiting);

  int runs = 0;
  for (const SqlAnswer& a : answers) {
    ASSERT_TRUE(a.ok()) << a.sqlstate << " " << a.message;
    if (a.At(0, 0) == "run") ++runs;
  }
  ASSERT_EQ(runs, 1);
  const std::string id = Scalar("SELECT id FROM charges WHERE key = 'order-2'");
  EXPECT_EQ(Scalar("SELECT count(*) FROM charges"), "1");
  for (const SqlAnswer& a : answers) {
    if (a.At(0, 0) == "run") continue;
    EXPECT_EQ(a.At(0, 0), "replay");
    EXPECT_EQ(a.At(0, 3), id);
  }
}

TEST_F(SqlFunctionsTest, ARollbackLeavesNoTraceOfTheKey) {
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  ASSERT_EQ(conn_->Exec(kBegin, {"order-3", "fp-3"}).At(0, 0), "run");
  ASSERT_TRUE(conn_->Exec("INSERT INTO charges (key, id) VALUES ('order-3', 'ch_3')").ok());
  ASSERT_TRUE(conn_->Exec(kFinish, {"order-3", "201", "{}", "done"}).ok());
  ASSERT_TRUE(conn_->Exec("ROLLBACK").ok());

  EXPECT_EQ(Scalar("SELECT count(*) FROM idem_keys"), "0");
  EXPECT_EQ(Scalar("SELECT count(*) FROM charges"), "0");
  EXPECT_TRUE(absl::IsNotFound(store_->Get({"", "order-3"}).status()));
  EXPECT_EQ(conn_->Exec(kBegin, {"order-3", "fp-3"}).At(0, 0), "run");  // autocommit: held now
}

// A finished key replays for its fingerprint and reports another request's as a mismatch,
// changing nothing; the record is an ordinary one (Get decodes its headers and body).
TEST_F(SqlFunctionsTest, AFinishedKeyReplaysItsOutcomeAndRefusesAnotherFingerprint) {
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  ASSERT_EQ(conn_->Exec(kBegin, {"order-4", "fp-4"}).At(0, 0), "run");
  ASSERT_TRUE(conn_
                  ->Exec(kFinish, {"order-4", "201",
                                   R"({"Content-Type": "application/json", "Link": ["<a>", "<b>"]})",
                                   R"({"id":"ch_4"})"})
                  .ok());
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());

  SqlAnswer replay = conn_->Exec(kBegin, {"order-4", "fp-4"});
  EXPECT_EQ(replay.At(0, 0), "replay");
  EXPECT_EQ(replay.At(0, 1), "201");
  EXPECT_EQ(replay.At(0, 2), R"({"Link": ["<a>", "<b>"], "Content-Type": "application/json"})");
  SqlAnswer mismatch = conn_->Exec(kBegin, {"order-4", "fp-other"});
  EXPECT_EQ(mismatch.At(0, 0), "mismatch");
  EXPECT_EQ(mismatch.At(0, 1), "<null>");

  absl::StatusOr<KeyRecord> record = store_->Get({"", "order-4"});
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kCompleted);
  EXPECT_EQ(record->fingerprint, "fp-4");
  EXPECT_EQ(record->response.status, 201);
  EXPECT_EQ(record->response.body, R"({"id":"ch_4"})");
  const std::vector<Header> headers = {
      {"Link", "<a>"}, {"Link", "<b>"}, {"Content-Type", "application/json"}};
  EXPECT_EQ(record->response.headers, headers);
}

// A deterministic failure: the caller rolls its writes back to its own savepoint and records the
// failure; it is committed as failed_final and replayed.
TEST_F(SqlFunctionsTest, AFailureRecordedAfterRollbackToSavepointIsReplayedAsFailedFinal) {
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  ASSERT_EQ(conn_->Exec(kBegin, {"order-5", "fp-5"}).At(0, 0), "run");
  ASSERT_TRUE(conn_->Exec("SAVEPOINT effect").ok());
  ASSERT_TRUE(conn_->Exec("INSERT INTO charges (key, id) VALUES ('order-5', 'ch_5')").ok());
  EXPECT_EQ(conn_->Exec("SELECT 1 / 0").sqlstate, "22012");  // the effect fails
  ASSERT_TRUE(conn_->Exec("ROLLBACK TO SAVEPOINT effect").ok());
  ASSERT_TRUE(conn_->Exec(kFinish, {"order-5", "422", "{}", "card declined"}).ok());
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());

  SqlAnswer replay = conn_->Exec(kBegin, {"order-5", "fp-5"});
  EXPECT_EQ(replay.At(0, 0), "replay");
  EXPECT_EQ(replay.At(0, 1), "422");
  EXPECT_EQ(replay.At(0, 3), "card declined");
  EXPECT_EQ(Scalar("SELECT count(*) FROM charges"), "0");
  absl::StatusOr<KeyRecord> record = store_->Get({"", "order-5"});
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->state, KeyState::kFailedFinal);
}

TEST_F(SqlFunctionsTest, FinishWithoutThisTransactionsClaimRaisesIdem2) {
  SqlAnswer autocommit = conn_->Exec(kFinish, {"order-6", "200", "{}", ""});
  EXPECT_EQ(autocommit.sqlstate, "IDEM2") << autocommit.message;
  EXPECT_NE(autocommit.message.find("holds no claim on key 'order-6'"), std::string::npos);

  // Another transaction's claim, committed unfinished, is not this one's either.
  auto other = Connect();
  ASSERT_EQ(other->Exec(kBegin, {"order-6", "fp-6"}).At(0, 0), "run");
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  EXPECT_EQ(conn_->Exec(kBegin, {"order-6", "fp-6"}).At(0, 0), "in_progress");
  EXPECT_EQ(conn_->Exec(kFinish, {"order-6", "200", "{}", ""}).sqlstate, "IDEM2");
  ASSERT_TRUE(conn_->Exec("ROLLBACK").ok());

  // A second begin of a key this transaction holds is in_progress, never a second run.
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  ASSERT_EQ(conn_->Exec(kBegin, {"order-7", "fp-7"}).At(0, 0), "run");
  EXPECT_EQ(conn_->Exec(kBegin, {"order-7", "fp-7"}).At(0, 0), "in_progress");
  ASSERT_TRUE(conn_->Exec("ROLLBACK").ok());
}

struct BadCall {
  std::string sql;
  std::vector<std::optional<std::string>> params;
  std::string sqlstate;
  std::string rule;  // a part of the message
};

TEST_F(SqlFunctionsTest, BadInputRaisesAClass22SqlstateNamingTheRuleAndStoresNothing) {
  const std::string k256(256, 'k');
  const std::vector<BadCall> calls = {
      {kBegin, {"", "fp"}, "22023", "key must not be empty"},
      {kBegin, {k256, "fp"}, "22023", "key must be at most 255 characters; got 256"},
      {kBegin, {"a b", "fp"}, "22023", "visible ASCII characters only"},
      {kBegin, {"caf\xc3\xa9", "fp"}, "22023", "visible ASCII characters only"},
      {kBegin, {"caf\xff", "fp"}, "22021", ""},  // invalid UTF-8: the server's own refusal
      {kBegin, {std::nullopt, "fp"}, "22004", "key must not be NULL"},
      {kBegin, {"k", std::nullopt}, "22004", "fingerprint must not be NULL"},
      {"SELECT * FROM idem.begin('k', 'fp', NULL)", {}, "22004", "tenant must not be NULL"},
      {"SELECT * FROM idem.begin('k', 'fp', $1)", {std::string(256, 't')}, "22023",
       "tenant must be at most 255 bytes"},
      {"SELECT * FROM idem.acquire('k', 'fp', '0 s')", {}, "22023", "lease must be a positive"},
      {"SELECT * FROM idem.acquire('k', 'fp', NULL)", {}, "22004", "lease must not be NULL"},
      {"SELECT idem.complete('k', 1, 700)", {}, "22023", "status must be an HTTP status"},
      {"SELECT idem.complete('k', 1, 200, '[1]')", {}, "22023", "headers must be a JSON object"},
      {"SELECT idem.complete('k', 1, 200, '{\"a b\": \"x\"}')", {}, "22023",
       "is not an HTTP token"},
      {"SELECT idem.complete('k', 1, 200, '{\"X-A\": 1}')", {}, "22023", "must have a string"},
      {"SELECT idem.complete('k', 1, 200, '{\"X-A\": \"a\\nb\"}')", {}, "22023",
       "control character"},
      {"SELECT idem.heartbeat('', 1, '1 s')", {}, "22023", "key must not be empty"},
      {"SELECT idem.release(NULL, 1)", {}, "22004", "key must not be NULL"},
  };
  for (const BadCall& call : calls) {
    SqlAnswer a = conn_->Exec(call.sql, call.params);
    EXPECT_EQ(a.sqlstate, call.sqlstate) << call.sql << ": " << a.message;
    EXPECT_EQ(a.sqlstate.substr(0, 2), "22") << call.sql;
    EXPECT_NE(a.message.find(call.rule), std::string::npos) << call.sql << ": " << a.message;
  }
  EXPECT_EQ(Scalar("SELECT count(*) FROM idem_keys"), "0");
}

// Records written through SQL expire and are swept like any other (idem.retention set short).
TEST_F(SqlFunctionsTest, TheStoresSweeperDeletesExpiredSqlRecords) {
  ASSERT_TRUE(conn_->Exec("SET idem.retention = '1 millisecond'").ok());
  ASSERT_TRUE(conn_->Exec("BEGIN").ok());
  ASSERT_EQ(conn_->Exec(kBegin, {"order-8", "fp-8"}).At(0, 0), "run");
  ASSERT_TRUE(conn_->Exec(kFinish, {"order-8", "200", "{}", "ok"}).ok());
  ASSERT_TRUE(conn_->Exec("COMMIT").ok());
  ASSERT_TRUE(Eventually([&] { return absl::IsNotFound(store_->Get({"", "order-8"}).status()); }));
  absl::StatusOr<int64_t> swept = store_->SweepExpired(100);
  ASSERT_TRUE(swept.ok()) << swept.status();
  EXPECT_EQ(*swept, 1);
  EXPECT_EQ(Scalar("SELECT count(*) FROM idem_keys"), "0");
}

}  // namespace
}  // namespace idem::pgtest
