// `idem relay` at scale, end to end: 10,000 messages through the real binary to a real HTTP
// receiver whose inbox applies each once (inbox_consumer.h). On SQLite the relay is SIGKILLed ten
// times on the way; on PostgreSQL two relays share the store while messages are still being
// committed. Nothing may be lost, applied twice, or applied out of order within an aggregate.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "idem/outbox_admin.h"
#include "inbox_consumer.h"
#include "relay_fixture.h"
#include "relay_process.h"
namespace idem::testing {
namespace {

constexpr int kMessages = 10'000;
constexpr int kAggregates = 100;

class RelayScale : public RelayE2e {
 protected:
  void SetUp() override {
    RelayE2e::SetUp();
    if (HasFatalFailure()) return;
    const std::string consumer_db =
        std::filesystem::temp_directory_path() /
        ("idem-relay-consumer-" + std::to_string(::getpid()) + "-" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    consumer_path_ = consumer_db;
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(consumer_path_ + suffix);
    consumer_ = std::make_unique<InboxConsumer>(consumer_path_);
    SetAnswer([this](const SeenRequest& r) { return consumer_->Receive(r); });
  }
  void TearDown() override {
    RelayE2e::TearDown();  // the receiver stops before the consumer goes
    consumer_.reset();
    for (const char* suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(consumer_path_ + suffix);
  }

  // Commits messages [from, to) in transactions of 500: message i is number i / kAggregates + 1
  // of aggregate "agg-<i % kAggregates>".
  void AddRange(int from, int to) {
    for (int start = from; start < to; start += 500) {
      std::vector<std::pair<std::string, std::string>> messages;
      for (int i = start; i < std::min(to, start + 500); ++i) {
        const std::string aggregate = "agg-" + std::to_string(i % kAggregates);
        messages.push_back({aggregate, aggregate + "/" + std::to_string(i / kAggregates + 1)});
      }
      Add(messages);
    }
  }

  // Everything applied once, in order, and recorded sent.
  void ExpectAllAppliedOnceInOrder() {
    const std::vector<std::string> problems = consumer_->problems();
    EXPECT_TRUE(problems.empty()) << problems.size() << " problems, first: " << problems.front();
    EXPECT_EQ(consumer_->applied(), kMessages);
    EXPECT_EQ(consumer_->EffectRows(), kMessages);
    EXPECT_EQ(consumer_->DistinctEffectIds(), kMessages);
    auto counts = CountOutbox(*store_);
    ASSERT_TRUE(counts.ok()) << counts.status();
    EXPECT_EQ(counts->sent, kMessages);
    EXPECT_EQ(counts->pending, 0);
    EXPECT_EQ(counts->dead, 0);
    std::printf("%d messages applied once; %lld redeliveries skipped by the inbox\n", kMessages,
                static_cast<long long>(consumer_->redelivered()));
  }

  std::string consumer_path_;
  std::unique_ptr<InboxConsumer> consumer_;
};

// Tests of one store only, run by that store's registration alone.
using RelayScaleOnSqlite = OnlyOn<RelayScale, E2eStore::kSqlite>;
using RelayScaleOnPostgres = OnlyOn<RelayScale, E2eStore::kPostgres>;

TEST_F(RelayScaleOnSqlite, TenThousandMessagesSurviveTenSigkillsAndAreAppliedOnceInOrder) {
  AddRange(0, kMessages);
  for (int kill = 1; kill <= 10; ++kill) {
    Background relay(RelayArgs({"--poll", "50ms"}));
    ASSERT_TRUE(consumer_->WaitApplied(kill * 900, std::chrono::seconds(60))) << relay.err();
    relay.Signal(SIGKILL);
    EXPECT_EQ(relay.Wait(), -1);
  }
  Background last(RelayArgs({"--poll", "50ms"}));
  ASSERT_TRUE(consumer_->WaitApplied(kMessages, std::chrono::seconds(120))) << last.err();
  last.Signal(SIGTERM);
  EXPECT_EQ(last.Wait(), 0) << last.err();
  ExpectAllAppliedOnceInOrder();
}
TEST_F(RelayScaleOnPostgres, TwoRelaysOnOneStoreDeliverTenThousandMessagesOnceInOrder) {
  AddRange(0, kMessages / 2);
  Background first(RelayArgs({"--poll", "1s"}));
  Background second(RelayArgs({"--poll", "1s"}));
  AddRange(kMessages / 2, kMessages);  // committed while both relays run
  ASSERT_TRUE(consumer_->WaitApplied(kMessages, std::chrono::seconds(120)))
      << first.err() << second.err();
  first.Signal(SIGTERM);
  second.Signal(SIGTERM);
  EXPECT_EQ(first.Wait(), 0) << first.err();
  EXPECT_EQ(second.Wait(), 0) << second.err();
  std::printf("first relay: %s\nsecond relay: %s\n", first.err().c_str(), second.err().c_str());
  ExpectAllAppliedOnceInOrder();
}

}  // namespace
}  // namespace idem::testing
