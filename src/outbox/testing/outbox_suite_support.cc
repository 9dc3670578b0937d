#include "outbox/testing/outbox_suite.h"

namespace idem::testing {

void OutboxTest::SetUp() {
  auto store = GetParam().open_fresh(StoreOptions{.clock = &clock_});
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
  Exec("CREATE TABLE effects (k TEXT PRIMARY KEY)");
}

void OutboxTest::Exec(const std::string& sql, std::vector<SqlValue> params) {
  auto tx = store_->Begin();
  ASSERT_TRUE(tx.ok()) << tx.status();
  auto done = (*tx)->Execute(sql, params);
  ASSERT_TRUE(done.ok()) << done.status() << " in " << sql;
  ASSERT_TRUE((*tx)->Commit().ok());
}

std::string OutboxTest::AddCommitted(const OutboxMessage& message) {
  auto tx = store_->Begin();
  EXPECT_TRUE(tx.ok()) << tx.status();
  if (!tx.ok()) return "";
  auto id = AddOutboxMessage(**tx, message, clock_);
  EXPECT_TRUE(id.ok()) << id.status();
  EXPECT_TRUE((*tx)->Commit().ok());
  return id.ok() ? *id : "";
}

std::vector<OutboxRecord> OutboxTest::All() {
  auto records = ListOutbox(*store_, OutboxQuery{.limit = 10000});
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<OutboxRecord>{};
}

OutboxMessage SampleMessage(std::string aggregate, std::string payload) {
  return OutboxMessage{.topic = "order.created",
                       .aggregate_key = std::move(aggregate),
                       .headers = {{"x-tenant", "acme"}},
                       .payload = std::move(payload)};
}

}  // namespace idem::testing
