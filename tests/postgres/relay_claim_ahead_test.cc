// The relay's loop on PostgreSQL, where it claims the next batch while the last is published
// (src/relay/relay_loop.h): order per aggregate holds across the two batches, a failure holds
// the aggregate's followers back in the batch claimed ahead, and every message is sent once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "idem/outbox.h"
#include "idem/outbox_admin.h"
#include "pg_test_support.h"
#include "relay/relay_loop.h"
#include "relay/relay_store.h"

namespace idem::relay {
namespace {

// Answers Retry (with a minute's Retry-After) for the payloads in `failing`, delivered for the
// rest, and records what it was given.
class RecordingSink final : public Sink {
 public:
  RecordingSink(std::set<std::string> failing, bool concurrent)
      : failing_(std::move(failing)), concurrent_(concurrent) {}
  Delivery Publish(const OutboxRecord& message) override {
    published.push_back(message.payload);
    if (!failing_.contains(message.payload)) return {};
    return {.kind = Delivery::Kind::kRetry, .error = "HTTP 503", .retry_after = Millis(60'000)};
  }
  bool concurrent() const override { return concurrent_; }
  std::vector<std::string> published;  // payloads, in publishing order

 private:
  std::set<std::string> failing_;
  bool concurrent_;
};

class RelayClaimAhead : public ::testing::Test {
 protected:
  // A fresh schema and store, for each case a test runs.
  void Fresh() {
    auto fresh = pgtest::CreateFreshSchemaUri();
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    auto opened = OpenStore(fresh->uri, {.clock = &clock_});
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = std::move(*opened);
    relay_store_ = std::make_unique<RelayStore>(*store_, Dialect::kPostgres, "ahead");
  }

  // Adds one message per (aggregate, payload), in order, in one committed transaction.
  void Add(const std::vector<std::pair<std::string, std::string>>& messages) {
    auto tx = store_->Begin();
    ASSERT_TRUE(tx.ok()) << tx.status();
    for (const auto& [aggregate, payload] : messages) {
      ASSERT_TRUE(AddOutboxMessage(
                      **tx, {.topic = "t", .aggregate_key = aggregate, .payload = payload}, clock_)
                      .ok());
    }
    ASSERT_TRUE((*tx)->Commit().ok());
  }

  // Runs the relay until a claim finds nothing to send (as `idem relay --once`).
  void RunUntilIdle(Sink& sink, int64_t batch_size) {
    Relay relay(*relay_store_, sink, clock_, {.batch_size = batch_size, .seed = 7}, metrics_);
    relay.SetWaiter([&](Millis) { relay.RequestStop(); });
    absl::Status ran = relay.Run();
    EXPECT_TRUE(ran.ok()) << ran;
  }

  std::map<std::string, OutboxState> States() {
    std::map<std::string, OutboxState> out;
    auto all = ListOutbox(*store_, {.limit = 10000});
    EXPECT_TRUE(all.ok()) << all.status();
    for (const OutboxRecord& r : all.ok() ? *all : std::vector<OutboxRecord>{}) {
      auto full = GetOutboxMessage(*store_, r.id);
      EXPECT_TRUE(full.ok()) << full.status();
      if (full.ok()) out[full->payload] = full->state;
    }
    return out;
  }

  ManualClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<RelayStore> relay_store_;
  RelayMetrics metrics_;
};

// Batches of one: a1 goes out while a2 is claimed ahead; a1 fails, so a2 must not go out in the
// batch claimed ahead (nor later: a1 waits a minute). b1 goes on.
TEST_F(RelayClaimAhead, FailureHoldsItsAggregateBackInTheBatchClaimedAhead) {
  for (bool concurrent : {false, true}) {
    SCOPED_TRACE(concurrent ? "waves" : "one at a time");
    Fresh();
    Add({{"a", "a1"}, {"a", "a2"}, {"b", "b1"}});
    RecordingSink sink({"a1"}, concurrent);
    RunUntilIdle(sink, 1);
    EXPECT_EQ(sink.published, (std::vector<std::string>{"a1", "b1"}));
    EXPECT_EQ(States(), (std::map<std::string, OutboxState>{{"a1", OutboxState::kPending},
                                                            {"a2", OutboxState::kPending},
                                                            {"b1", OutboxState::kSent}}));
  }
}

TEST_F(RelayClaimAhead, EveryMessageIsSentOnceInOrderPerAggregate) {
  std::vector<std::pair<std::string, std::string>> messages;
  for (int i = 0; i < 12; ++i) {
    for (const char* aggregate : {"x", "y", "z"}) {
      messages.emplace_back(aggregate, fmt::format("{}{:02}", aggregate, i));
    }
  }
  for (bool concurrent : {false, true}) {
    for (int64_t batch : {2, 5, 7}) {
      SCOPED_TRACE(fmt::format("{}, batch {}", concurrent ? "waves" : "one at a time", batch));
      Fresh();
      Add(messages);
      RecordingSink sink({}, concurrent);
      RunUntilIdle(sink, batch);
      std::map<char, std::vector<std::string>> per_aggregate;
      for (const std::string& payload : sink.published)
        per_aggregate[payload[0]].push_back(payload);
      ASSERT_EQ(sink.published.size(), messages.size());
      for (const auto& [aggregate, payloads] : per_aggregate) {
        EXPECT_TRUE(std::is_sorted(payloads.begin(), payloads.end())) << aggregate;
        EXPECT_EQ(payloads.size(), 12u) << aggregate;
      }
      for (const auto& [payload, state] : States()) EXPECT_EQ(state, OutboxState::kSent) << payload;
    }
  }
}

// Publishing takes 9 s a message (lease 30 s, send timeout 10 s, batches of 2): when the second
// batch, claimed ahead at the start, begins to be published 18 s later, its claim's lease has
// 12 s left, room for one message. Its lease runs from then instead, so both of its messages go
// out in it, before the third batch's c1 (with the claim's lease, b2 waited for a later batch).
TEST_F(RelayClaimAhead, BatchClaimedAheadHasItsLeaseFromWhenItsPublishingStarts) {
  Fresh();
  Add({{"a", "a1"}, {"b", "b1"}, {"a", "a2"}, {"b", "b2"}, {"c", "c1"}});
  class SlowSink final : public Sink {
   public:
    SlowSink(Store& store, ManualClock& clock) : store_(store), clock_(clock) {}
    Delivery Publish(const OutboxRecord& message) override {
      // The clock moves only once the claim ahead of the first batch ("ahead:2") has leased.
      if (published.empty()) {
        EXPECT_TRUE(ClaimedAhead()) << "the second batch was not claimed";
      }
      published.push_back(message.payload);
      clock_.Advance(Millis(9'000));
      return {};
    }
    std::vector<std::string> published;

   private:
    bool ClaimedAhead() {
      for (int i = 0; i < 500; ++i) {
        auto tx = store_.Begin();
        if (!tx.ok()) return false;
        auto rows = (*tx)->Query("SELECT 1 FROM idem_outbox_leases WHERE token = 'ahead:2'", {});
        (void)(*tx)->Rollback();
        if (rows.ok() && !rows->empty()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      return false;
    }
    Store& store_;
    ManualClock& clock_;
  };
  SlowSink sink(*store_, clock_);
  RunUntilIdle(sink, 2);
  EXPECT_EQ(sink.published, (std::vector<std::string>{"a1", "b1", "a2", "b2", "c1"}));
  for (const auto& [payload, state] : States()) EXPECT_EQ(state, OutboxState::kSent) << payload;
}

}  // namespace
}  // namespace idem::relay
