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

}  // namespace
}  // namespace idem::relay
