// Lease batches on a shared PostgreSQL: gateways batching the same keys in different orders, and
// lease times from the database's clock.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "idem/store.h"
#include "pg_test_support.h"

namespace idem {
namespace {

using namespace std::chrono_literals;

constexpr int kBatchKeys = 24;
constexpr int kRounds = 8;

// The claims of one round, keys in ascending order, or descending when `reversed`.
std::vector<LeaseWrite> ClaimsOfRound(int round, bool reversed, const std::string& owner) {
  std::vector<LeaseWrite> writes;
  for (int i = 0; i < kBatchKeys; ++i) {
    const int k = reversed ? kBatchKeys - 1 - i : i;
    writes.push_back({.kind = LeaseWrite::Kind::kClaim,
                      .scope = {"tenant", fmt::format("round-{}-key-{:02}", round, k)},
                      .fingerprint = std::string(64, 'a'),
                      .owner = owner,
                      .lease = 30s});
  }
  return writes;
}

TEST(PostgresLeaseBatch, TwoGatewaysBatchingOneKeySetInOppositeOrdersNeitherDeadlockNorShareAKey) {
  absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  StoreOptions options;
  options.lock_timeout = 20s;  // a deadlock, not a lock timeout, is what would fail this test
  absl::StatusOr<std::unique_ptr<Store>> a = OpenStore(fresh->uri, options);
  absl::StatusOr<std::unique_ptr<Store>> b = OpenStore(fresh->uri, options);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();

  std::barrier start(2);
  std::vector<absl::StatusOr<std::vector<LeaseWriteResult>>> got_a(kRounds), got_b(kRounds);
  auto run = [&](Store& store, bool reversed, const std::string& owner, auto& got) {
    for (int round = 0; round < kRounds; ++round) {
      const std::vector<LeaseWrite> writes = ClaimsOfRound(round, reversed, owner);
      start.arrive_and_wait();
      got[round] = store.ApplyLeaseBatch(writes);
    }
  };
  std::thread first([&] { run(**a, false, "gateway-a", got_a); });
  std::thread second([&] { run(**b, true, "gateway-b", got_b); });
  first.join();
  second.join();

  for (int round = 0; round < kRounds; ++round) {
    ASSERT_TRUE(got_a[round].ok()) << got_a[round].status();
    ASSERT_TRUE(got_b[round].ok()) << got_b[round].status();
    for (int k = 0; k < kBatchKeys; ++k) {
      const LeaseWriteResult& ra = (*got_a[round])[k];
      const LeaseWriteResult& rb = (*got_b[round])[kBatchKeys - 1 - k];
      ASSERT_TRUE(ra.status.ok()) << ra.status;
      ASSERT_TRUE(rb.status.ok()) << rb.status;
      EXPECT_NE(ra.claimed, rb.claimed) << "round " << round << " key " << k;
      // The loser sees the winner's record: the same fence, the winner's owner.
      EXPECT_EQ(ra.record.fence, rb.record.fence);
      EXPECT_EQ(ra.record.owner, ra.claimed ? "gateway-a" : "gateway-b");
    }
  }
}

TEST(PostgresLeaseBatch, WithoutAnInjectedClockLeasesRunOnTheDatabasesClock) {
  absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh->uri, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status();
  const auto database_now = [&]() -> int64_t {
    absl::StatusOr<std::vector<std::vector<std::string>>> rows = pgtest::AdminQuery(
        fresh->schema, "SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint");
    return rows.ok() ? std::strtoll((*rows)[0][0].c_str(), nullptr, 10) : -1;
  };
  const int64_t before = database_now();
  const std::vector<LeaseWrite> writes = {{.kind = LeaseWrite::Kind::kClaim,
                                           .scope = {"tenant", "k"},
                                           .fingerprint = std::string(64, 'a'),
                                           .owner = "w",
                                           .lease = 30s}};
  absl::StatusOr<std::vector<LeaseWriteResult>> results = (*store)->ApplyLeaseBatch(writes);
  const int64_t after = database_now();
  ASSERT_TRUE(results.ok()) << results.status();
  const LeaseWriteResult& claim = (*results)[0];
  ASSERT_TRUE(claim.claimed);
  EXPECT_GE(claim.now_ms, before);
  EXPECT_LE(claim.now_ms, after);
  EXPECT_EQ(claim.lease_until_ms, claim.now_ms + 30'000);
  EXPECT_EQ(claim.record.created_ms, claim.now_ms);
  // A heartbeat moves the lease on by the database's clock too.
  absl::StatusOr<std::vector<LeaseWriteResult>> beat =
      (*store)->ApplyLeaseBatch(std::vector<LeaseWrite>{{.kind = LeaseWrite::Kind::kHeartbeat,
                                                         .scope = {"tenant", "k"},
                                                         .lease = 60s,
                                                         .fence = claim.record.fence}});
  ASSERT_TRUE(beat.ok()) << beat.status();
  EXPECT_TRUE((*beat)[0].status.ok()) << (*beat)[0].status;
  EXPECT_GE((*beat)[0].now_ms, claim.now_ms);
  EXPECT_EQ((*beat)[0].lease_until_ms, (*beat)[0].now_ms + 60'000);
}

TEST(PostgresLeaseBatch, AStatementFailingInTheMiddleRollsBackTheWholeBatch) {
  absl::StatusOr<pgtest::FreshSchema> fresh = pgtest::CreateFreshSchemaUri();
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(fresh->uri, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status();
  const auto claim = [](std::string key) {
    return LeaseWrite{.kind = LeaseWrite::Kind::kClaim,
                      .scope = {"tenant", std::move(key)},
                      .fingerprint = std::string(64, 'a'),
                      .owner = "w",
                      .lease = 30s};
  };
  absl::StatusOr<std::vector<LeaseWriteResult>> held =
      (*store)->ApplyLeaseBatch(std::vector<LeaseWrite>{claim("d")});
  ASSERT_TRUE(held.ok()) << held.status();
  // The database refuses any write of key "boom", which sorts between the batch's other keys.
  ASSERT_TRUE(pgtest::AdminQuery(fresh->schema,
                                 "CREATE FUNCTION refuse_boom() RETURNS trigger LANGUAGE plpgsql "
                                 "AS $$ BEGIN IF NEW.key = 'boom' THEN RAISE EXCEPTION 'refused'; "
                                 "END IF; RETURN NEW; END $$; "
                                 "CREATE TRIGGER refuse_boom BEFORE INSERT OR UPDATE ON idem_keys "
                                 "FOR EACH ROW EXECUTE FUNCTION refuse_boom()")
                  .ok());

  std::vector<LeaseWrite> writes = {claim("c"), claim("boom"), claim("a")};
  writes.push_back({.kind = LeaseWrite::Kind::kComplete,
                    .scope = {"tenant", "d"},
                    .fence = (*held)[0].record.fence,
                    .response = {.status = 201, .body = "done"}});
  absl::StatusOr<std::vector<LeaseWriteResult>> failed = (*store)->ApplyLeaseBatch(writes);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("refused"), std::string::npos) << failed.status();

  // Nothing of it was committed, before or after the failing write: "a" and "c" are free, "d" is
  // still in flight; and the store goes on working.
  absl::StatusOr<std::vector<LeaseWriteResult>> again =
      (*store)->ApplyLeaseBatch(std::vector<LeaseWrite>{claim("a"), claim("c"), claim("d")});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE((*again)[0].claimed);
  EXPECT_TRUE((*again)[1].claimed);
  EXPECT_FALSE((*again)[2].claimed);
  EXPECT_EQ((*again)[2].record.state, KeyState::kInProgress);
}

}  // namespace
}  // namespace idem
