// How a PostgreSQL lease batch's statements are planned (src/store/postgres/pg_set_statements.h):
// the row locks and the claims' INSERT from a plan made once per connection, that looks each key
// up by its primary key even when it was made while idem_keys was small; the fenced writes
// prepared but planned at every run while the table is small, from one plan once it is large,
// each key looked up by its primary key whatever the table's statistics say of its other indexes;
// and all of them prepared again on a new connection.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "idem/clock.h"
#include "idem/store.h"
#include "pg_test_support.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using Kind = LeaseWrite::Kind;

LeaseWrite PlanClaim(std::string key) {
  return {.kind = Kind::kClaim,
          .scope = {"t", std::move(key)},
          .fingerprint = std::string(64, 'a'),
          .owner = "w",
          .lease = 30s};
}

LeaseWrite Complete(std::string key, int64_t fence) {
  return {.kind = Kind::kComplete,
          .scope = {"t", std::move(key)},
          .fence = fence,
          .response = {.status = 201, .body = "done"}};
}

// A statement prepared on the store's connection, with how often it ran from the cached plan.
struct PreparedStatement {
  std::string name;
  int64_t generic_plans = 0;
  int64_t custom_plans = 0;
};

class PostgresBatchPlans : public ::testing::Test {
 protected:
  // A store on a fresh schema with one connection, so that batches and the queries of
  // PreparedLike run on the same one.
  void Open() {
    absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    fresh_ = *fresh;
    StoreOptions options;
    options.clock = &clock_;
    options.max_connections = 1;
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh_.uri, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  // Batch `round`: claims four new keys and completes the four of the round before.
  absl::Status RunBatch(int round) {
    std::vector<LeaseWrite> writes;
    for (int k = 0; k < 4; ++k) writes.push_back(PlanClaim(fmt::format("key-{}-{}", round, k)));
    for (int k = 0; k < 4 && round > 0; ++k) {
      writes.push_back(Complete(fmt::format("key-{}-{}", round - 1, k), fences_[k]));
    }
    absl::StatusOr<std::vector<LeaseWriteResult>> results = store_->ApplyLeaseBatch(writes);
    if (!results.ok()) return results.status();
    for (int k = 0; k < 4; ++k) {
      EXPECT_TRUE((*results)[k].claimed) << round << " " << k;
      fences_[k] = (*results)[k].record.fence;
    }
    for (size_t n = 4; n < results->size(); ++n) EXPECT_TRUE((*results)[n].status.ok());
    return absl::OkStatus();
  }

  // Runs `sql` lines on the store's connection in a transaction of their own (rolled back) and
  // returns the last one's rows.
  std::vector<SqlRow> OnStoreConnection(const std::vector<std::string>& sql) {
    absl::StatusOr<std::unique_ptr<StoreTransaction>> tx = store_->Begin();
    EXPECT_TRUE(tx.ok()) << tx.status();
    if (!tx.ok()) return {};
    std::vector<SqlRow> rows;
    for (const std::string& line : sql) {
      absl::StatusOr<std::vector<SqlRow>> got = (*tx)->Query(line);
      EXPECT_TRUE(got.ok()) << line << ": " << got.status();
      if (got.ok()) rows = *std::move(got);
    }
    EXPECT_TRUE((*tx)->Rollback().ok());
    return rows;
  }

  // The plan EXPLAIN prints as the last of `sql` (run as OnStoreConnection runs them), one line
  // per row.
  std::string PlanOnStoreConnection(const std::vector<std::string>& sql) {
    std::string text;
    for (const SqlRow& row : OnStoreConnection(sql)) text += std::get<std::string>(row[0]) + "\n";
    return text;
  }

  // The statement prepared on the store's connection whose text contains `part`.
  std::optional<PreparedStatement> PreparedLike(const std::string& part) {
    const std::vector<SqlRow> rows = OnStoreConnection(
        {"SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE strpos("
         "statement, '" +
         part + "') > 0 AND strpos(statement, 'pg_prepared_statements') = 0"});
    if (rows.size() != 1) return std::nullopt;
    return PreparedStatement{std::get<std::string>(rows[0][0]), std::get<int64_t>(rows[0][1]),
                             std::get<int64_t>(rows[0][2])};
  }

  ManualClock clock_;
  pgtest::FreshSchema fresh_;
  std::unique_ptr<Store> store_;
  int64_t fences_[4] = {};
};

TEST_F(PostgresBatchPlans, RowLocksAndClaimsRunFromOnePlanAndFencedWritesArePlannedAtEveryRun) {
  Open();
  for (int round = 0; round < 8; ++round) ASSERT_TRUE(RunBatch(round).ok());
  const std::optional<PreparedStatement> locks = PreparedLike("FOR UPDATE) AS r ORDER BY u.n");
  const std::optional<PreparedStatement> claims = PreparedLike("INSERT INTO idem_keys");
  const std::optional<PreparedStatement> outcomes = PreparedLike("UPDATE idem_keys AS r SET state");
  ASSERT_TRUE(locks.has_value());
  ASSERT_TRUE(claims.has_value());
  ASSERT_TRUE(outcomes.has_value());
  EXPECT_EQ(locks->generic_plans, 8);
  EXPECT_EQ(locks->custom_plans, 0);
  EXPECT_EQ(claims->generic_plans, 8);
  EXPECT_EQ(claims->custom_plans, 0);
  // The first round had no outcome to record.
  EXPECT_EQ(outcomes->generic_plans, 0);
  EXPECT_EQ(outcomes->custom_plans, 7);
}

TEST_F(PostgresBatchPlans, ARowLockPlanMadeWhileTheTableWasSmallLooksEachKeyUpByPrimaryKey) {
  Open();
  // A small table with fresh statistics, and no autovacuum to invalidate the plan cached below.
  ASSERT_TRUE(RunBatch(0).ok());
  ASSERT_TRUE(
      pgtest::AdminQuery(fresh_.schema, "ALTER TABLE idem_keys SET (autovacuum_enabled = false)")
          .ok());
  ASSERT_TRUE(pgtest::AdminQuery(fresh_.schema, "VACUUM ANALYZE idem_keys").ok());
  for (int round = 1; round < 8; ++round) ASSERT_TRUE(RunBatch(round).ok());
  // Made for a table of a few rows, where a sequential scan costs least; a plan the table
  // outgrows.
  const std::optional<PreparedStatement> locks = PreparedLike("FOR UPDATE) AS r ORDER BY u.n");
  ASSERT_TRUE(locks.has_value());
  const std::string text = PlanOnStoreConnection(
      {"SET LOCAL plan_cache_mode = force_generic_plan",
       fmt::format("EXPLAIN EXECUTE {}('{{t}}', '{{key-0-0}}')", locks->name)});
  EXPECT_NE(text.find("Index Scan using idem_keys_pkey"), std::string::npos) << text;
  EXPECT_EQ(text.find("Seq Scan"), std::string::npos) << text;
}

// The outcomes' UPDATE names the state and expiry of the rows it writes. While those conditions
// matched idem_keys_in_progress and idem_keys_expires, a table with a few keys in progress among
// many finished ones (accurate statistics) was planned as a scan of the in-progress index hashed
// against the arrays: a scan that also reads every dead entry the index keeps until the next
// vacuum, at every batch. Each key is to be found by its primary key.
TEST_F(PostgresBatchPlans, AnOutcomePlanLooksEachKeyUpByPrimaryKeyWhateverTheOtherIndexesHold) {
  Open();
  for (int round = 0; round < 2; ++round) ASSERT_TRUE(RunBatch(round).ok());
  // Statistics of exactly these rows: no autovacuum between the ANALYZE below and the EXPLAIN.
  ASSERT_TRUE(
      pgtest::AdminQuery(fresh_.schema, "ALTER TABLE idem_keys SET (autovacuum_enabled = false)")
          .ok());
  ASSERT_TRUE(pgtest::AdminQuery(fresh_.schema,
                                 "INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, "
                                 "owner, lease_until_ms, created_ms, updated_ms, expires_ms) "
                                 "SELECT 't', 'many-' || i, 'f', CASE WHEN i < 64 THEN 1 ELSE 2 "
                                 "END, 1000 + i, 'w', 9e15, 1, 1, 9e15 "
                                 "FROM generate_series(0, 9999) AS i; ANALYZE idem_keys")
                  .ok());
  const std::optional<PreparedStatement> outcomes = PreparedLike("UPDATE idem_keys AS r SET state");
  ASSERT_TRUE(outcomes.has_value());
  // Outcomes of the 64 keys in progress: tenants, keys, fences, states, statuses, then the
  // offsets and lengths of empty headers and bodies, the bytes, the clock (the database's) and
  // the retention.
  std::string tenants, keys, fences, states, statuses, offsets, lengths;
  for (int i = 0; i < 64; ++i) {
    const char* comma = i == 0 ? "" : ",";
    tenants += fmt::format("{}t", comma);
    keys += fmt::format("{}many-{}", comma, i);
    fences += fmt::format("{}{}", comma, 1000 + i);
    states += fmt::format("{}2", comma);
    statuses += fmt::format("{}201", comma);
    offsets += fmt::format("{}1", comma);
    lengths += fmt::format("{}0", comma);
  }
  const std::string text = PlanOnStoreConnection(
      {// As a batch plans it (the clock statement's settings, then custom plans).
       "SET LOCAL enable_seqscan = off", "SET LOCAL plan_cache_mode = force_custom_plan",
       fmt::format("EXPLAIN EXECUTE {}('{{{}}}', '{{{}}}', '{{{}}}', '{{{}}}', '{{{}}}', "
                   "'{{{}}}', '{{{}}}', '{{{}}}', '{{{}}}', ''::bytea, ''::bytea, NULL, 86400000)",
                   outcomes->name, tenants, keys, fences, states, statuses, offsets, lengths,
                   offsets, lengths)});
  EXPECT_NE(text.find("Index Cond: ((tenant = u.t) AND (key = u.k))"), std::string::npos) << text;
  EXPECT_EQ(text.find("idem_keys_in_progress"), std::string::npos) << text;
  EXPECT_EQ(text.find("idem_keys_expires"), std::string::npos) << text;
}

// From a heap of kLargeKeyTableBytes (a megabyte) on, the fenced writes run from one plan per
// connection instead of being planned at every batch: made without sequential scans and for arrays
// of no particular length, it is still the loop that looks each key up by its primary key.
TEST_F(PostgresBatchPlans, OnALargeTableTheFencedWritesRunFromOnePlanOfPrimaryKeyLookups) {
  Open();
  ASSERT_TRUE(pgtest::AdminQuery(fresh_.schema,
                                 "INSERT INTO idem_keys (tenant, key, fingerprint, state, fence, "
                                 "owner, lease_until_ms, created_ms, updated_ms, expires_ms, body) "
                                 "SELECT 't', 'many-' || i, 'f', 2, 1000 + i, 'w', 9e15, 1, 1, "
                                 "9e15, convert_to(repeat('b', 200), 'UTF8') "
                                 "FROM generate_series(0, 9999) AS i; ANALYZE idem_keys")
                  .ok());
  // The first batch learns the table's size; the five after it record outcomes.
  for (int round = 0; round < 6; ++round) ASSERT_TRUE(RunBatch(round).ok());
  const std::vector<LeaseWrite> claims = {PlanClaim("beat"), PlanClaim("drop")};
  absl::StatusOr<std::vector<LeaseWriteResult>> claimed = store_->ApplyLeaseBatch(claims);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  const std::vector<LeaseWrite> fenced_writes = {
      {.kind = Kind::kHeartbeat,
       .scope = {"t", "beat"},
       .lease = 60s,
       .fence = (*claimed)[0].record.fence},
      {.kind = Kind::kRelease, .scope = {"t", "drop"}, .fence = (*claimed)[1].record.fence}};
  absl::StatusOr<std::vector<LeaseWriteResult>> fenced = store_->ApplyLeaseBatch(fenced_writes);
  ASSERT_TRUE(fenced.ok()) << fenced.status();
  EXPECT_TRUE((*fenced)[0].status.ok()) << (*fenced)[0].status;
  EXPECT_TRUE((*fenced)[1].status.ok()) << (*fenced)[1].status;
  EXPECT_EQ(store_->Get({"t", "drop"}).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->Get({"t", "key-4-0"})->response.body, "done");

  const std::optional<PreparedStatement> outcomes = PreparedLike("UPDATE idem_keys AS r SET state");
  const std::optional<PreparedStatement> beats = PreparedLike("SET lease_until_ms = c.ms + u.l");
  const std::optional<PreparedStatement> releases = PreparedLike("DELETE FROM idem_keys AS r");
  ASSERT_TRUE(outcomes.has_value());
  ASSERT_TRUE(beats.has_value());
  ASSERT_TRUE(releases.has_value());
  EXPECT_EQ(outcomes->generic_plans, 5);
  EXPECT_EQ(outcomes->custom_plans, 0);
  EXPECT_EQ(beats->generic_plans, 1);
  EXPECT_EQ(releases->generic_plans, 1);
  for (const std::string& execute :
       {fmt::format("{}('{{t,t}}', '{{many-1,many-2}}', '{{1001,1002}}', '{{2,2}}', "
                    "'{{201,201}}', '{{1,1}}', '{{0,0}}', '{{1,1}}', '{{0,0}}', ''::bytea, "
                    "''::bytea, NULL, 86400000)",
                    outcomes->name),
        fmt::format("{}('{{t}}', '{{many-1}}', '{{1001}}', '{{60000}}', NULL)", beats->name),
        fmt::format("{}('{{t}}', '{{many-1}}', '{{1001}}', NULL)", releases->name)}) {
    const std::string text = PlanOnStoreConnection(
        {"SET LOCAL enable_seqscan = off", "SET LOCAL plan_cache_mode = force_generic_plan",
         "EXPLAIN EXECUTE " + execute});
    EXPECT_NE(text.find("Index Cond: ((tenant = u.t) AND (key = u.k))"), std::string::npos) << text;
  }
}

TEST_F(PostgresBatchPlans, ABatchOnANewConnectionPreparesItsStatementsAgain) {
  Open();
  for (int round = 0; round < 3; ++round) ASSERT_TRUE(RunBatch(round).ok());
  const std::vector<SqlRow> pid = OnStoreConnection({"SELECT pg_backend_pid()"});
  ASSERT_EQ(pid.size(), 1u);
  const int64_t old_pid = std::get<int64_t>(pid[0][0]);
  ASSERT_TRUE(
      pgtest::AdminQuery({}, fmt::format("SELECT pg_terminate_backend({}, 10000)", old_pid)).ok());
  // The batch on the dead connection fails (nothing of it applied) and the pool drops it; the next
  // runs on a new connection, where no statement of idem's is prepared yet.
  absl::Status status = RunBatch(3);
  if (!status.ok()) {
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    status = RunBatch(3);
  }
  ASSERT_TRUE(status.ok()) << status;
  for (int round = 4; round < 8; ++round) ASSERT_TRUE(RunBatch(round).ok());
  const std::vector<SqlRow> new_pid = OnStoreConnection({"SELECT pg_backend_pid()"});
  ASSERT_EQ(new_pid.size(), 1u);
  EXPECT_NE(std::get<int64_t>(new_pid[0][0]), old_pid);
  const std::optional<PreparedStatement> locks = PreparedLike("FOR UPDATE) AS r ORDER BY u.n");
  ASSERT_TRUE(locks.has_value());
  EXPECT_EQ(locks->generic_plans, 5);
  EXPECT_EQ(store_->Get({"t", "key-6-3"})->response.body, "done");
}

}  // namespace
}  // namespace idem
