// Several relays on one PostgreSQL store: a claim leases its batch's aggregates, so another
// relay's claim never takes a message of a leased aggregate, until the lease is released or
// lapses (src/relay/relay_store.h).
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "idem/outbox.h"
#include "pg_test_support.h"
#include "relay/relay_store.h"

namespace idem::relay {
namespace {

class RelayLeases : public ::testing::Test {
 protected:
  void SetUp() override {
    auto fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    for (auto* store : {&store_a_, &store_b_}) {
      auto opened = OpenStore(fresh->uri, {.clock = &clock_});
      ASSERT_TRUE(opened.ok()) << opened.status();
      *store = std::move(*opened);
    }
    relay_a_ = std::make_unique<RelayStore>(*store_a_, Dialect::kPostgres, "a");
    relay_b_ = std::make_unique<RelayStore>(*store_b_, Dialect::kPostgres, "b");
    auto tx = store_a_->Begin();
    ASSERT_TRUE(tx.ok());
    for (const char* aggregate : {"x", "y", "z", "x", "y", "z"}) {
      ASSERT_TRUE(AddOutboxMessage(**tx,
                                   {.topic = "t", .aggregate_key = aggregate, .payload = aggregate},
                                   clock_)
                      .ok());
    }
    ASSERT_TRUE((*tx)->Commit().ok());
  }

  static std::vector<int64_t> Seqs(const Batch& batch) {
    std::vector<int64_t> out;
    for (const OutboxRecord& m : batch.messages) out.push_back(m.seq);
    return out;
  }

  static std::set<std::string> Aggregates(const Batch& batch) {
    std::set<std::string> out;
    for (const OutboxRecord& m : batch.messages) out.insert(m.aggregate_key);
    return out;
  }

  ManualClock clock_;
  std::unique_ptr<Store> store_a_, store_b_;
  std::unique_ptr<RelayStore> relay_a_, relay_b_;
};

TEST_F(RelayLeases, SecondRelayNeverTakesAnAggregateTheFirstLeased) {
  auto first = relay_a_->Claim(clock_.NowMillis(), 2, 30'000, false);  // x1, y1
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(Aggregates(*first), (std::set<std::string>{"x", "y"}));
  auto second = relay_b_->Claim(clock_.NowMillis(), 100, 30'000, false);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(Aggregates(*second), (std::set<std::string>{"z"}));
  EXPECT_EQ(second->messages.size(), 2u);  // z1, z2: the whole chain of its own aggregate
  auto third = relay_b_->Claim(clock_.NowMillis(), 100, 30'000, false);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE(third->messages.empty());
}

TEST_F(RelayLeases, ReleasedLeaseLetsAnotherRelayTakeTheAggregate) {
  auto first = relay_a_->Claim(clock_.NowMillis(), 100, 30'000, false);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->messages.size(), 6u);
  ASSERT_TRUE(relay_a_->Finish(*first, {}, clock_.NowMillis()).ok());  // nothing attempted
  auto second = relay_b_->Claim(clock_.NowMillis(), 100, 30'000, false);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->messages.size(), 6u);
}

TEST_F(RelayLeases, LapsedLeaseOfADeadRelayIsTakenOver) {
  auto first = relay_a_->Claim(clock_.NowMillis(), 100, 1'000, false);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->messages.size(), 6u);
  EXPECT_TRUE(relay_b_->Claim(clock_.NowMillis() + 999, 100, 30'000, false)->messages.empty());
  auto later = relay_b_->Claim(clock_.NowMillis() + 1'000, 100, 30'000, false);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->messages.size(), 6u);
}

// Claiming ahead (a relay claims its next batch while the last is still published): the claim
// leaves the unfinished batch's messages out and takes its aggregates' leases over, and those
// leases then stay held until the batch claimed ahead is finished.
TEST_F(RelayLeases, ClaimAheadTakesTheUnfinishedBatchsAggregatesOverAndLeavesItsMessagesOut) {
  auto first = relay_a_->Claim(clock_.NowMillis(), 2, 30'000, false);  // x1, y1
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(Seqs(*first), (std::vector<int64_t>{1, 2}));
  auto ahead = relay_a_->Claim(clock_.NowMillis(), 100, 30'000, false, &*first);
  ASSERT_TRUE(ahead.ok()) << ahead.status();
  EXPECT_EQ(Seqs(*ahead), (std::vector<int64_t>{3, 4, 5, 6}));  // z1, x2, y2, z2
  EXPECT_TRUE(relay_b_->Claim(clock_.NowMillis(), 100, 30'000, false)->messages.empty());

  // Finishing the first batch records its messages but leaves the leases to the second.
  const std::vector<Outcome> sent = {{.seq = 1}, {.seq = 2}};
  ASSERT_TRUE(relay_a_->Finish(*first, sent, clock_.NowMillis()).ok());
  EXPECT_TRUE(relay_b_->Claim(clock_.NowMillis(), 100, 30'000, false)->messages.empty());
  ASSERT_TRUE(relay_a_->Finish(*ahead, {}, clock_.NowMillis()).ok());  // nothing attempted
  auto after = relay_b_->Claim(clock_.NowMillis(), 100, 30'000, false);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(Seqs(*after), (std::vector<int64_t>{3, 4, 5, 6}));
}

TEST_F(RelayLeases, ClaimAheadLeavesAnotherRelaysAggregatesAlone) {
  auto first = relay_a_->Claim(clock_.NowMillis(), 1, 30'000, false);  // x1
  ASSERT_TRUE(first.ok()) << first.status();
  auto other = relay_b_->Claim(clock_.NowMillis(), 1, 30'000, false);  // y1
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(Aggregates(*other), (std::set<std::string>{"y"}));
  auto ahead = relay_a_->Claim(clock_.NowMillis(), 100, 30'000, false, &*first);
  ASSERT_TRUE(ahead.ok()) << ahead.status();
  EXPECT_EQ(Seqs(*ahead), (std::vector<int64_t>{3, 4, 6}));  // z1, x2, z2
}

TEST_F(RelayLeases, SqliteRefusesAClaimAhead) {
  RelayStore sqlite(*store_a_, Dialect::kSqlite, "s");  // only the dialect matters here
  Batch unfinished;
  EXPECT_TRUE(absl::IsFailedPrecondition(
      sqlite.Claim(clock_.NowMillis(), 100, 30'000, false, &unfinished).status()));
}

}  // namespace
}  // namespace idem::relay
