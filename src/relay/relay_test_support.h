// Test support for the relay's unit tests: a SQLite store with messages added through the
// library, and a sink that answers from a script and records what it was given.
#ifndef IDEM_RELAY_RELAY_TEST_SUPPORT_H_
#define IDEM_RELAY_RELAY_TEST_SUPPORT_H_

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "idem/outbox.h"
#include "idem/outbox_admin.h"
#include "relay/relay_store.h"
#include "relay/sink.h"
#include "store/testing/sqlite_store_factory.h"

namespace idem::relay {

class ScriptSink final : public Sink {
 public:
  using Script = std::function<Delivery(const OutboxRecord&)>;
  // `concurrent`: take the batch in waves of distinct aggregates (as the NATS sink does).
  explicit ScriptSink(Script script = {}, bool concurrent = false)
      : script_(std::move(script)), concurrent_(concurrent) {}
  Delivery Publish(const OutboxRecord& message) override {
    published.push_back(message.payload);
    return script_ ? script_(message) : Delivery{};
  }
  std::vector<Delivery> PublishEach(std::span<const OutboxRecord* const> messages) override {
    waves.emplace_back();
    for (const OutboxRecord* m : messages) waves.back().push_back(m->payload);
    return Sink::PublishEach(messages);
  }
  bool concurrent() const override { return concurrent_; }
  std::vector<std::string> published;           // payloads, in publishing order
  std::vector<std::vector<std::string>> waves;  // concurrent: the payloads of each wave

 private:
  Script script_;
  bool concurrent_;
};

class RelayFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = testing::SqliteStoreFactory().open_fresh(StoreOptions{.clock = &clock_});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    relay_store_ = std::make_unique<RelayStore>(*store_, Dialect::kSqlite, "test");
  }

  // Adds one message per (aggregate, payload) in one committed transaction.
  void Add(const std::vector<std::pair<std::string, std::string>>& messages) {
    auto tx = store_->Begin();
    ASSERT_TRUE(tx.ok()) << tx.status();
    for (const auto& [aggregate, payload] : messages) {
      auto id = AddOutboxMessage(
          **tx, {.topic = "t", .aggregate_key = aggregate, .payload = payload}, clock_);
      ASSERT_TRUE(id.ok()) << id.status();
    }
    ASSERT_TRUE((*tx)->Commit().ok());
  }

  std::vector<OutboxRecord> All() {
    auto all = ListOutbox(*store_, {.limit = 10000});
    EXPECT_TRUE(all.ok()) << all.status();
    return all.ok() ? *all : std::vector<OutboxRecord>{};
  }

  OutboxRecord ByPayload(const std::string& payload) {
    for (const OutboxRecord& r : All()) {
      auto full = GetOutboxMessage(*store_, r.id);
      if (full.ok() && full->payload == payload) return *full;
    }
    ADD_FAILURE() << "no message " << payload;
    return {};
  }

  ManualClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<RelayStore> relay_store_;
};

inline std::vector<std::string> Payloads(const Batch& batch) {
  std::vector<std::string> out;
  for (const OutboxRecord& r : batch.messages) out.push_back(r.payload);
  return out;
}

}  // namespace idem::relay

#endif  // IDEM_RELAY_RELAY_TEST_SUPPORT_H_
