// Lease batches on PostgreSQL as set-based statements (src/store/postgres/pg_set_batch.h): one
// statement per kind of write, and every write's own result exactly as one statement at a time
// would give it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "idem/clock.h"
#include "idem/store.h"
#include "pg_test_support.h"

namespace idem {
namespace {

using namespace std::chrono_literals;
using Kind = LeaseWrite::Kind;

const std::string kFingerprint(64, 'a');

LeaseWrite Claim(std::string key, std::string owner = "w", std::string tenant = "t") {
  return {.kind = Kind::kClaim,
          .scope = {std::move(tenant), std::move(key)},
          .fingerprint = kFingerprint,
          .owner = std::move(owner),
          .lease = 30s};
}

LeaseWrite Fenced(Kind kind, std::string key, int64_t fence, StoredResponse response = {},
                  std::string tenant = "t") {
  return {.kind = kind,
          .scope = {std::move(tenant), std::move(key)},
          .lease = 60s,
          .fence = fence,
          .response = std::move(response)};
}

class PostgresSetBatch : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    fresh_ = *fresh;
    StoreOptions options;
    options.clock = &clock_;
    options.retention = 1h;
    absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh_.uri, options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  std::vector<LeaseWriteResult> Apply(const std::vector<LeaseWrite>& writes) {
    absl::StatusOr<std::vector<LeaseWriteResult>> results = store_->ApplyLeaseBatch(writes);
    EXPECT_TRUE(results.ok()) << results.status();
    if (!results.ok()) return std::vector<LeaseWriteResult>(writes.size());
    EXPECT_EQ(results->size(), writes.size());
    return *std::move(results);
  }

  // Counts the statements that write idem_keys from now on, by operation (INSERT, UPDATE, DELETE).
  void CountStatements() {
    ASSERT_TRUE(pgtest::AdminQuery(
                    fresh_.schema,
                    "CREATE TABLE statement_log (op text NOT NULL); "
                    "CREATE FUNCTION log_statement() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                    "INSERT INTO statement_log VALUES (TG_OP); RETURN NULL; END $$; "
                    "CREATE TRIGGER log_statement AFTER INSERT OR UPDATE OR DELETE ON idem_keys "
                    "FOR EACH STATEMENT EXECUTE FUNCTION log_statement()")
                    .ok());
  }
  std::map<std::string, int> Statements() {
    absl::StatusOr<std::vector<std::vector<std::string>>> rows =
        pgtest::AdminQuery(fresh_.schema, "SELECT op, count(*) FROM statement_log GROUP BY op; ");
    std::map<std::string, int> counts;
    if (rows.ok()) {
      for (const auto& row : *rows) counts[row[0]] = std::stoi(row[1]);
    }
    (void)pgtest::AdminQuery(fresh_.schema, "DELETE FROM statement_log");
    return counts;
  }

  ManualClock clock_;
  pgtest::FreshSchema fresh_;
  std::unique_ptr<Store> store_;
};

TEST_F(PostgresSetBatch, EachKindOfWriteOfABatchIsOneStatement) {
  CountStatements();
  std::vector<LeaseWrite> claims;
  for (int k = 0; k < 16; ++k) claims.push_back(Claim(fmt::format("key-{:02}", k)));
  const std::vector<LeaseWriteResult> claimed = Apply(claims);
  EXPECT_EQ(Statements(), (std::map<std::string, int>{{"INSERT", 1}}));

  std::vector<LeaseWrite> writes;
  for (int k = 0; k < 16; ++k) {
    const int64_t fence = claimed[k].record.fence;
    const std::string key = fmt::format("key-{:02}", k);
    if (k < 4) writes.push_back(Fenced(Kind::kHeartbeat, key, fence));
    if (k >= 4 && k < 8) writes.push_back(Fenced(Kind::kRelease, key, fence));
    if (k >= 8 && k < 12) writes.push_back(Fenced(Kind::kComplete, key, fence, {.status = 201}));
    if (k >= 12) writes.push_back(Fenced(Kind::kFailFinal, key, fence, {.status = 422}));
  }
  for (const LeaseWriteResult& result : Apply(writes)) EXPECT_TRUE(result.status.ok());
  // One UPDATE for the heartbeats, one for the outcomes (completed and failed_final), one DELETE.
  EXPECT_EQ(Statements(), (std::map<std::string, int>{{"DELETE", 1}, {"UPDATE", 2}}));
}

TEST_F(PostgresSetBatch, TwoWritesOnOneKeyInABatchApplyInTheGivenOrder) {
  // The second claim of a key finds the first's record, whichever keys sort between them.
  const std::vector<LeaseWriteResult> first =
      Apply({Claim("k", "a"), Claim("j"), Claim("k", "b"), Claim("l")});
  ASSERT_TRUE(first[0].claimed);
  EXPECT_TRUE(first[1].claimed);
  EXPECT_FALSE(first[2].claimed);
  EXPECT_EQ(first[2].record.owner, "a");
  EXPECT_EQ(first[2].record.fence, first[0].record.fence);
  EXPECT_TRUE(first[3].claimed);

  // A heartbeat, a release and a claim of one key: each sees the one before it.
  const int64_t fence = first[0].record.fence;
  const std::vector<LeaseWriteResult> second =
      Apply({Fenced(Kind::kHeartbeat, "k", fence), Claim("m"), Fenced(Kind::kRelease, "k", fence),
             Claim("k", "c"), Fenced(Kind::kHeartbeat, "k", fence)});
  EXPECT_TRUE(second[0].status.ok()) << second[0].status;
  EXPECT_TRUE(second[1].claimed);
  EXPECT_TRUE(second[2].status.ok()) << second[2].status;
  ASSERT_TRUE(second[3].claimed);
  EXPECT_EQ(second[3].record.owner, "c");
  EXPECT_GT(second[3].record.fence, fence);
  EXPECT_EQ(second[4].status.code(), absl::StatusCode::kAborted) << second[4].status;
}

TEST_F(PostgresSetBatch, ABatchMixingNewTakenFoundAndExpiredClaimsGivesEachItsOwnResult) {
  const std::vector<LeaseWriteResult> setup =
      Apply({Claim("held", "other"), Claim("done", "other"), Claim("old", "gone")});
  ASSERT_TRUE(Apply({Fenced(Kind::kComplete, "done", setup[1].record.fence,
                            {.status = 200, .body = "answer"}),
                     Fenced(Kind::kHeartbeat, "held", setup[0].record.fence)})[0]
                  .status.ok());
  clock_.Advance(2h);  // every record so far has expired
  LeaseWrite own = Claim("own", "request-7");
  own.claim_nonce = "0123456789abcdef0123456789abcdef";
  const std::vector<LeaseWriteResult> renewed = Apply({own, Claim("fresh-1")});
  ASSERT_TRUE(renewed[0].claimed);
  LeaseWrite other_fingerprint = Claim("busy", "x");
  ASSERT_TRUE(Apply({other_fingerprint, Claim("fresh-2")})[0].claimed);
  clock_.Advance(31s);  // "own", "busy" and "fresh-1" have lapsed
  ASSERT_TRUE(Apply({Claim("live"), Claim("fresh-3")})[0].claimed);

  other_fingerprint.owner = "y";
  other_fingerprint.fingerprint = std::string(64, 'b');
  const std::vector<LeaseWriteResult> got =
      Apply({Claim("new"), Claim("old", "next"), own, other_fingerprint, Claim("live", "z"),
             Fenced(Kind::kHeartbeat, "held", setup[0].record.fence)});
  EXPECT_TRUE(got[0].claimed);  // absent: inserted
  EXPECT_FALSE(got[0].taken_over);
  EXPECT_TRUE(got[1].claimed);  // expired record of another request: replaced
  EXPECT_FALSE(got[1].taken_over);
  EXPECT_EQ(got[1].record.owner, "next");
  EXPECT_EQ(got[1].record.created_ms, got[1].now_ms);
  EXPECT_TRUE(got[2].claimed);  // its own lapsed record: taken over, a new fence
  EXPECT_TRUE(got[2].taken_over);
  EXPECT_GT(got[2].record.fence, renewed[0].record.fence);
  EXPECT_EQ(got[2].lease_until_ms, got[2].now_ms + 30'000);
  EXPECT_FALSE(got[3].claimed);  // another request's lapsed lease: reported as it is
  EXPECT_EQ(got[3].record.owner, "x");
  EXPECT_FALSE(got[4].claimed);  // live, another owner: found
  EXPECT_EQ(got[4].record.owner, "w");
  EXPECT_EQ(got[4].record.state, KeyState::kInProgress);
  EXPECT_EQ(got[5].status.code(), absl::StatusCode::kAborted);  // "held" expired long ago
  for (const LeaseWriteResult& result : got) EXPECT_EQ(result.now_ms, clock_.NowMillis());
}

TEST_F(PostgresSetBatch, OneStaleFenceAmongFreshOnesFailsThatWriteAlone) {
  std::vector<LeaseWrite> claims;
  for (int k = 0; k < 9; ++k) claims.push_back(Claim(fmt::format("key-{}", k)));
  const std::vector<LeaseWriteResult> claimed = Apply(claims);
  const auto fence = [&](int k) { return claimed[k].record.fence; };
  const StoredResponse created{.status = 201, .headers = {{"Location", "/k/5"}}, .body = "five"};
  const StoredResponse refused{
      .status = 409, .headers = {{"Content-Type", "text/plain"}, {"X-A", ""}}, .body = ""};
  const std::vector<LeaseWriteResult> got = Apply({
      Fenced(Kind::kHeartbeat, "key-0", fence(0)),
      Fenced(Kind::kHeartbeat, "key-1", fence(1) + 1000),  // stale
      Fenced(Kind::kHeartbeat, "key-2", fence(2)),
      Fenced(Kind::kComplete, "key-3", fence(3) + 1000, created),  // stale
      Fenced(Kind::kComplete, "key-4", fence(4), {.status = 200, .body = std::string("\0x", 2)}),
      Fenced(Kind::kComplete, "key-5", fence(5), created),
      Fenced(Kind::kFailFinal, "key-6", fence(6), refused),
      Fenced(Kind::kRelease, "key-7", fence(7) + 1000),  // stale
      Fenced(Kind::kRelease, "key-8", fence(8)),
  });
  for (int k : {0, 2, 4, 5, 6, 8}) EXPECT_TRUE(got[k].status.ok()) << k << ": " << got[k].status;
  for (int k : {1, 3, 7}) {
    EXPECT_EQ(got[k].status.code(), absl::StatusCode::kAborted) << k << ": " << got[k].status;
  }
  EXPECT_EQ(got[0].lease_until_ms, got[0].now_ms + 60'000);
  EXPECT_EQ(store_->Get({"t", "key-1"})->lease_until_ms, claimed[1].lease_until_ms);
  EXPECT_EQ(store_->Get({"t", "key-3"})->state, KeyState::kInProgress);
  EXPECT_EQ(store_->Get({"t", "key-4"})->response.body, std::string("\0x", 2));
  EXPECT_EQ(store_->Get({"t", "key-5"})->response, created);
  EXPECT_EQ(store_->Get({"t", "key-6"})->response, refused);
  EXPECT_EQ(store_->Get({"t", "key-6"})->state, KeyState::kFailedFinal);
  EXPECT_TRUE(store_->Get({"t", "key-7"}).ok());
  EXPECT_EQ(store_->Get({"t", "key-8"}).status().code(), absl::StatusCode::kNotFound);
}

TEST(PostgresSetBatchClock, WithoutAnInjectedClockEveryWriteOfABatchRunsAtTheDatabasesNow) {
  absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh->uri, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status();
  const auto database_now = [&]() -> int64_t {
    absl::StatusOr<std::vector<std::vector<std::string>>> rows = pgtest::AdminQuery(
        fresh->schema, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    return rows.ok() ? std::stoll((*rows)[0][0]) : -1;
  };
  const int64_t before = database_now();
  absl::StatusOr<std::vector<LeaseWriteResult>> claimed =
      (*store)->ApplyLeaseBatch(std::vector<LeaseWrite>{Claim("a"), Claim("b"), Claim("c")});
  const int64_t after = database_now();
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  const int64_t now = (*claimed)[0].now_ms;
  EXPECT_GE(now, before);
  EXPECT_LE(now, after);
  for (const LeaseWriteResult& claim : *claimed) {
    ASSERT_TRUE(claim.claimed);
    EXPECT_EQ(claim.now_ms, now);
    EXPECT_EQ(claim.record.created_ms, now);
    EXPECT_EQ(claim.record.lease_until_ms, now + 30'000);
    EXPECT_EQ(claim.lease_until_ms, now + 30'000);
    EXPECT_EQ(claim.record.expires_ms, now + 24 * 3'600'000);  // the default retention
  }
  absl::StatusOr<std::vector<LeaseWriteResult>> next = (*store)->ApplyLeaseBatch(
      std::vector<LeaseWrite>{Fenced(Kind::kHeartbeat, "a", (*claimed)[0].record.fence),
                              Fenced(Kind::kComplete, "b", (*claimed)[1].record.fence)});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_TRUE((*next)[0].status.ok()) << (*next)[0].status;
  EXPECT_GE((*next)[0].now_ms, now);
  EXPECT_EQ((*next)[0].lease_until_ms, (*next)[0].now_ms + 60'000);
  EXPECT_EQ((*store)->Get({"t", "a"})->lease_until_ms, (*next)[0].now_ms + 60'000);
  EXPECT_EQ((*store)->Get({"t", "b"})->expires_ms, (*next)[1].now_ms + 24 * 3'600'000);
}

TEST_F(PostgresSetBatch, ScopesWithQuotesCommasBracesAndBackslashesRoundTrip) {
  const std::vector<std::string> tenants = {"", "a\"b", "c,d", "{e}", "f\\g", "NULL", "ü ñ"};
  std::vector<LeaseWrite> claims;
  for (const std::string& tenant : tenants) claims.push_back(Claim("k\"{,}\\", "o\"\\", tenant));
  const std::vector<LeaseWriteResult> got = Apply(claims);
  for (size_t n = 0; n < tenants.size(); ++n) {
    ASSERT_TRUE(got[n].claimed) << n;
    EXPECT_EQ(got[n].record.scope.tenant, tenants[n]);
    EXPECT_EQ(got[n].record.scope.key, "k\"{,}\\");
    EXPECT_EQ(got[n].record.owner, "o\"\\");
  }
  std::vector<LeaseWrite> completes;
  for (size_t n = 0; n < tenants.size(); ++n) {
    completes.push_back(Fenced(Kind::kComplete, "k\"{,}\\", got[n].record.fence,
                               {.status = 200, .body = tenants[n]}, tenants[n]));
  }
  for (const LeaseWriteResult& result : Apply(completes)) EXPECT_TRUE(result.status.ok());
  for (const std::string& tenant : tenants) {
    EXPECT_EQ(store_->Get({tenant, "k\"{,}\\"})->response.body, tenant);
  }
}

}  // namespace
}  // namespace idem
