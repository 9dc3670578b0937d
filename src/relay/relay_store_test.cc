// RelayStore on SQLite: what a claim takes, what Finish records, what retention deletes.
#include "relay/relay_test_support.h"

namespace idem::relay {
namespace {

class RelayStoreTest : public RelayFixture {
 protected:
  Batch Claim(bool let_dead_pass = false, int64_t max = 100) {
    auto batch = relay_store_->Claim(clock_.NowMillis(), max, 30'000, let_dead_pass);
    EXPECT_TRUE(batch.ok()) << batch.status();
    return batch.ok() ? *batch : Batch{};
  }
  void Record(const std::string& payload, Outcome::Kind kind, int64_t next = 0) {
    const Batch batch;
    ASSERT_TRUE(relay_store_
                    ->Finish(batch,
                             {{.seq = ByPayload(payload).seq,
                               .kind = kind,
                               .next_attempt_ms = next,
                               .error = "boom"}},
                             clock_.NowMillis())
                    .ok());
  }
};

TEST_F(RelayStoreTest, ClaimTakesDueMessagesInSeqOrderUpToTheBatchSize) {
  Add({{"a", "a1"}, {"b", "b1"}, {"a", "a2"}});
  EXPECT_EQ(Payloads(Claim()), (std::vector<std::string>{"a1", "b1", "a2"}));
  EXPECT_EQ(Payloads(Claim(false, 2)), (std::vector<std::string>{"a1", "b1"}));
}

TEST_F(RelayStoreTest, MessageWaitingForRetryHoldsBackItsAggregateOnly) {
  Add({{"a", "a1"}, {"a", "a2"}, {"b", "b1"}});
  Record("a1", Outcome::Kind::kRetry, clock_.NowMillis() + 1000);
  EXPECT_EQ(Payloads(Claim()), (std::vector<std::string>{"b1"}));
  clock_.Advance(Millis(1000));
  EXPECT_EQ(Payloads(Claim()), (std::vector<std::string>{"a1", "a2", "b1"}));
}

TEST_F(RelayStoreTest, DeadMessageHoldsBackFollowersUnlessLetPass) {
  Add({{"a", "a1"}, {"a", "a2"}, {"b", "b1"}});
  Record("a1", Outcome::Kind::kDead);
  EXPECT_EQ(Payloads(Claim()), (std::vector<std::string>{"b1"}));
  EXPECT_EQ(Payloads(Claim(true)), (std::vector<std::string>{"a2", "b1"}));
}

TEST_F(RelayStoreTest, FinishRecordsSentRetryAndDead) {
  Add({{"a", "a1"}, {"b", "b1"}, {"c", "c1"}});
  Record("a1", Outcome::Kind::kSent);
  Record("b1", Outcome::Kind::kRetry, clock_.NowMillis() + 5);
  Record("c1", Outcome::Kind::kDead);
  const OutboxRecord a = ByPayload("a1"), b = ByPayload("b1"), c = ByPayload("c1");
  EXPECT_EQ(a.state, OutboxState::kSent);
  EXPECT_EQ(a.sent_ms, clock_.NowMillis());
  EXPECT_EQ(a.attempts, 1);
  EXPECT_EQ(b.state, OutboxState::kPending);
  EXPECT_EQ(b.attempts, 1);
  EXPECT_EQ(b.next_attempt_ms, clock_.NowMillis() + 5);
  EXPECT_EQ(b.last_error, "boom");
  EXPECT_EQ(c.state, OutboxState::kDead);
  EXPECT_EQ(c.last_error, "boom");
}

TEST_F(RelayStoreTest, FinishLeavesASentOrPurgedMessageAlone) {
  Add({{"a", "a1"}});
  Record("a1", Outcome::Kind::kSent);
  Record("a1", Outcome::Kind::kDead);
  EXPECT_EQ(ByPayload("a1").state, OutboxState::kSent);
}

TEST_F(RelayStoreTest, DeleteSentRemovesOnlySentMessagesPastTheCutoff) {
  Add({{"a", "old"}, {"b", "pending"}});
  Record("old", Outcome::Kind::kSent);
  clock_.Advance(Millis(10));
  Add({{"c", "new"}});
  Record("new", Outcome::Kind::kSent);
  auto deleted = relay_store_->DeleteSent(clock_.NowMillis(), 1000);
  ASSERT_TRUE(deleted.ok()) << deleted.status();
  EXPECT_EQ(*deleted, 1);
  EXPECT_EQ(All().size(), 2u);
  EXPECT_EQ(*relay_store_->CountPending(), 1);
}

TEST(RelayDialect, UriSchemesAreRecognisedAndOthersRefused) {
  EXPECT_EQ(*DialectOf("sqlite:./x.db"), Dialect::kSqlite);
  EXPECT_EQ(*DialectOf("postgresql://u@h/db"), Dialect::kPostgres);
  EXPECT_EQ(*DialectOf("postgres://u@h/db"), Dialect::kPostgres);
  EXPECT_EQ(DialectOf("mysql://x").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::relay
