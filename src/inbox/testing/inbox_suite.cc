// The inbox on every store: a message is consumed once per committed transaction.
#include "inbox/testing/inbox_suite.h"

#include <memory>

#include "idem/inbox.h"

namespace idem::testing {
namespace {

using ::absl::StatusCode;

}  // namespace

void InboxTest::SetUp() {
  auto store = GetParam().open_fresh(StoreOptions{.clock = &clock_});
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok());
  ASSERT_TRUE((*tx)->Execute("CREATE TABLE totals (customer TEXT PRIMARY KEY, cents BIGINT)").ok());
  ASSERT_TRUE((*tx)->Commit().ok());
}

absl::StatusOr<bool> InboxTest::Consume(const std::string& source, const std::string& id,
                                        int64_t cents, bool commit) {
  auto tx = store_->Begin();
  if (!tx.ok()) return tx.status();
  absl::StatusOr<bool> first = ConsumeOnce(**tx, source, id, clock_);
  if (first.ok() && *first) {
    const SqlValue params[] = {cents};
    auto applied = (*tx)->Execute(
        "INSERT INTO totals (customer, cents) VALUES ('c', $1) ON CONFLICT (customer) DO "
        "UPDATE SET cents = totals.cents + excluded.cents",
        params);
    if (!applied.ok()) return applied.status();
  }
  if (!commit) {
    (void)(*tx)->Rollback();
    return first;
  }
  if (absl::Status s = (*tx)->Commit(); !s.ok()) return s;
  return first;
}

int64_t InboxTest::Total() {
  auto tx = store_->Begin();
  EXPECT_TRUE(tx.ok());
  auto rows = (*tx)->Query("SELECT cents FROM totals WHERE customer = 'c'");
  EXPECT_TRUE(rows.ok()) << rows.status();
  (void)(*tx)->Rollback();
  if (!rows.ok() || rows->empty()) return 0;
  return std::get<int64_t>((*rows)[0][0]);
}

namespace {

TEST_P(InboxTest, RedeliveredMessageIsSkippedAndItsEffectAppliedOnce) {
  EXPECT_EQ(*Consume("payments", "m-1", 500), true);
  EXPECT_EQ(*Consume("payments", "m-1", 500), false);
  EXPECT_EQ(*Consume("payments", "m-1", 500), false);
  EXPECT_EQ(Total(), 500);
}

TEST_P(InboxTest, RolledBackConsumptionIsAppliedWhenTheMessageComesAgain) {
  EXPECT_EQ(*Consume("payments", "m-1", 500, /*commit=*/false), true);
  EXPECT_EQ(Total(), 0);
  EXPECT_EQ(*Consume("payments", "m-1", 500), true);
  EXPECT_EQ(Total(), 500);
}

TEST_P(InboxTest, SourcesAreSeparateScopes) {
  EXPECT_EQ(*Consume("payments", "m-1", 1), true);
  EXPECT_EQ(*Consume("refunds", "m-1", 2), true);
  EXPECT_EQ(Total(), 3);
}

TEST_P(InboxTest, MalformedSourceOrIdIsInvalidArgumentAndRecordsNothing) {
  for (auto [source, id] : {std::pair<std::string, std::string>{"", "m"},
                            {"s", ""},
                            {"has space", "m"},
                            {"s", std::string(256, 'x')},
                            {"s", "tab\t"}}) {
    EXPECT_EQ(Consume(source, id, 1).status().code(), StatusCode::kInvalidArgument) << id;
  }
  EXPECT_EQ(Total(), 0);
}

TEST_P(InboxTest, ForgetInboxBeforeDeletesOnlyOlderRecords) {
  EXPECT_EQ(*Consume("s", "old", 1), true);
  clock_.Advance(Millis(1000));
  EXPECT_EQ(*Consume("s", "new", 1), true);
  auto forgotten = ForgetInboxBefore(*store_, clock_.NowMillis());
  ASSERT_TRUE(forgotten.ok()) << forgotten.status();
  EXPECT_EQ(*forgotten, 1);
  EXPECT_EQ(*Consume("s", "old", 1), true);  // forgotten: applied again
  EXPECT_EQ(*Consume("s", "new", 1), false);
  EXPECT_EQ(ForgetInboxBefore(*store_, 0, 0).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace idem::testing
